#!/usr/bin/env python3
"""containerd-config.py RUN PAUSE_IMAGE < default.toml > config.toml

Turns `containerd config default` into the config of the test's private containerd: its own
root, state and socket under RUN, the CNI config under RUN/cni/net.d with Debian's plugins,
the locally built sandbox image, and restrict_oom_score_adj (these hosts refuse lowering a
process's oom_score_adj, and without it every pod sandbox fails in runc with "can't get final
child's PID from pipe"). Fails when a setting it must change is not in the input."""

import re
import sys

run, pause = sys.argv[1], sys.argv[2]
text = sys.stdin.read()
# (pattern with the indentation as group 1, the setting that replaces the rest of the line)
changes = [
    (r"^()root = .*$", 'root = "%s/containerd/root"' % run),
    (r"^()state = .*$", 'state = "%s/containerd/state"' % run),
    (r'^(\s*)address = "/run/containerd/containerd.sock"$', 'address = "%s/containerd/containerd.sock"' % run),
    (r"^(\s*)restrict_oom_score_adj = false$", "restrict_oom_score_adj = true"),
    (r"^(\s*)sandbox_image = .*$", 'sandbox_image = "%s"' % pause),
    (r"^(\s*)bin_dir = .*$", 'bin_dir = "/usr/lib/cni"'),
    (r"^(\s*)conf_dir = .*$", 'conf_dir = "%s/cni/net.d"' % run),
    (r'^(\s*)path = "/opt/containerd"$', 'path = "%s/containerd/opt"' % run),
]
for pattern, setting in changes:
    text, n = re.subn(pattern, lambda m: m.group(1) + setting, text, flags=re.M)
    if n == 0:
        sys.exit("containerd-config: no line matches %s in the default config" % pattern)
sys.stdout.write(text)
