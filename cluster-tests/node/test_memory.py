"""Memory stays small with many connections: idle connections hold no read buffer."""

import resource

from nsrv_check import register_ok
from rmq import Broker, NamesrvClient, RequestCode, TopicConfig

N_CONNS = 1000


def vm_data_kb(proc) -> int:
    """Heap and anonymous mappings (kB): what the process allocated, touched or not."""
    with open(f"/proc/{proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmData:"):
                return int(line.split()[1])
    return 0


def test_many_connections_cost_little_memory(nsrvd, connect):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < N_CONNS + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, N_CONNS + 200), hard))
    register_ok(NamesrvClient(connect(nsrvd)), Broker(), [TopicConfig("T", 4, 4, 6), TopicConfig("U", 4, 4, 6)])
    before = vm_data_kb(nsrvd)
    conns = [connect(nsrvd) for _ in range(N_CONNS)]
    for c in conns:
        assert c.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).code == 0
    grown_kb = vm_data_kb(nsrvd) - before
    # A 64 KiB read buffer per connection would be ~64 MB here; a connection is ~1 KiB.
    assert grown_kb < 16 * 1024, f"allocated memory grew {grown_kb} kB for {N_CONNS} connections"
    for c in conns:
        c.close()
