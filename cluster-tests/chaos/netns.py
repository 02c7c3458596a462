"""Network namespaces joined by one Linux bridge, and faults made with nftables inside them.

Every run gets its own prefix (``chaos<pid>``): a hub namespace holding the bridge, and one
namespace per node, broker and client, each with a veth whose other end is a bridge port. The
addresses come from 10.77.0.0/24, which exists only inside these namespaces. ``Net.close()``
deletes every namespace of the run (the kernel then drops their veths, nft tables and
conntrack state); ``cleanup_prefix()`` does the same for a run that died (run.sh's trap).

Faults are nft rules in the faulty node's own namespace, in one table (``inet chaos``) so that
healing is deleting that table: ``cut`` drops every packet to or from a set of addresses (TCP
connections hang, as with a pulled cable), ``loss`` drops a share of the gossip datagrams a
node receives (``numgen random mod 100 < N``), ``divert`` sends a node's outgoing gossip
datagrams through a local relay (relay.py) that delays and reorders them.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from typing import Dict, Iterable, List, Optional, Sequence

SUBNET = "10.77.0"
CLONE_NEWNET = 0x40000000
RELAY_MARK = 0x77  # packets the relay sends itself are not diverted again


def sh(*args: str, check: bool = True, input_text: Optional[str] = None) -> subprocess.CompletedProcess:
    r = subprocess.run(list(args), input=input_text, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip() or r.stdout.strip()}")
    return r


def list_netns() -> List[str]:
    out = sh("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def kill_netns_processes(ns: str) -> None:
    """SIGKILL every process inside namespace ns (SIGCONT first: a stopped one must die too)."""
    for _ in range(3):
        pids = [int(p) for p in sh("ip", "netns", "pids", ns, check=False).stdout.split() if int(p) != os.getpid()]
        if not pids:
            return
        for p in pids:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(p, sig)
                except ProcessLookupError:
                    pass
        time.sleep(0.2)


def cleanup_prefix(prefix: str) -> List[str]:
    """Deletes every namespace whose name starts with prefix, after killing what runs in it."""
    gone = []
    for ns in list_netns():
        if ns.startswith(prefix):
            kill_netns_processes(ns)
            sh("ip", "netns", "del", ns, check=False)
            gone.append(ns)
    return gone


def enter(ns: str) -> None:
    """Moves this process (call it before starting threads) into namespace ns."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {ns}")
    finally:
        os.close(fd)


class Net:
    """The run's namespaces. ``hosts`` maps a short name (n1, c, bsim, ...) to its last octet."""

    def __init__(self, prefix: str, hosts: Dict[str, int]) -> None:
        self.prefix = prefix
        self.hosts = dict(hosts)
        self.hub = f"{prefix}-hub"
        self.created: List[str] = []

    def ns(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def ip(self, host: str) -> str:
        return f"{SUBNET}.{self.hosts[host]}"

    def up(self) -> "Net":
        self._add(self.hub)
        sh("ip", "-n", self.hub, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.hub, "link", "set", "br0", "up")
        for host in self.hosts:
            ns = self.ns(host)
            self._add(ns)
            port = f"p-{host}"[:15]
            sh("ip", "-n", self.hub, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "-n", self.hub, "link", "set", port, "master", "br0", "up")
            sh("ip", "-n", ns, "addr", "add", f"{self.ip(host)}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        return self

    def _add(self, ns: str) -> None:
        sh("ip", "netns", "add", ns)
        self.created.append(ns)

    def close(self) -> None:
        for ns in reversed(self.created):
            kill_netns_processes(ns)
            sh("ip", "netns", "del", ns, check=False)
        self.created = []

    def exec_prefix(self, host: str) -> List[str]:
        return ["ip", "netns", "exec", self.ns(host)]

    # ------------------------------------------------------------------ faults

    def nft(self, host: str, script: str) -> None:
        sh("ip", "netns", "exec", self.ns(host), "nft", "-f", "-", input_text=script)

    def _table(self, host: str) -> None:
        self.nft(host, """
table inet chaos {
  chain input { type filter hook input priority -10; }
  chain output { type filter hook output priority -10; }
  chain divert { type nat hook output priority -110; }
}
""")

    def heal(self, host: str) -> None:
        """Removes every fault of host (its nft table) and forgets NAT bindings made by diverts."""
        sh("ip", "netns", "exec", self.ns(host), "nft", "delete", "table", "inet", "chaos", check=False)
        sh("ip", "netns", "exec", self.ns(host), "conntrack", "-F", check=False)

    def cut(self, host: str, others: Iterable[str]) -> None:
        """host neither sends to nor receives from the others (silently dropped both ways)."""
        addrs = ", ".join(self.ip(o) for o in others)
        self._table(host)
        self.nft(host, f"""
add rule inet chaos input ip saddr {{ {addrs} }} drop
add rule inet chaos output ip daddr {{ {addrs} }} drop
""")

    def loss(self, host: str, peers: Iterable[str], udp_port: int, percent: int) -> None:
        """host loses percent % of the UDP datagrams it receives from peers on udp_port."""
        addrs = ", ".join(self.ip(o) for o in peers)
        self._table(host)
        self.nft(host, f"""
add rule inet chaos input ip saddr {{ {addrs} }} udp dport {udp_port} numgen random mod 100 < {percent} drop
""")

    def divert(self, host: str, peer_to_relay_port: Dict[str, int], udp_port: int) -> None:
        """host's gossip datagrams for each peer go to a relay on host's own address and port."""
        self._table(host)
        rules = "".join(
            f"add rule inet chaos divert meta mark != {RELAY_MARK} ip daddr {self.ip(p)} udp dport {udp_port} "
            f"dnat ip to {self.ip(host)}:{rport}\n"
            for p, rport in peer_to_relay_port.items()
        )
        self.nft(host, rules)
        # Flows already tracked keep their (absent) NAT binding: forget them.
        sh("ip", "netns", "exec", self.ns(host), "conntrack", "-F", check=False)
