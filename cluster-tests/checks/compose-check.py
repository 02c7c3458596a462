#!/usr/bin/env python3
"""ctest compose_check: the compose files (docker/docker-compose.yml, docker/node4.yml) render to
the same build arguments under both engines users run them with, without a container engine.

Two renderers of `${...}` variables:
  * podman-compose 1.0.3 (Debian 12's): its own substitution pattern, copied below (and, when
    podman-compose is installed here, also its installed `rec_subs`). It substitutes a braced
    default only when the default is non-empty: `${VAR:-}` stays literal text, which reached
    the rocketmq Dockerfile as a build argument and failed Maven ("roleHint: ${maven_mirror").
  * the Compose Specification's interpolation rules (Docker compose v2).
For each file, each renderer and MAVEN_MIRROR unset, empty or a URL, no value may still hold
`${`, MAVEN_MIRROR must arrive as the URL (or as "no mirror" when unset or empty), and the
rocketmq Dockerfile's own mirror step (its `case` block, run with sh) must accept exactly those
values and refuse a literal left-over variable with a message.
Usage: cluster-tests/checks/compose-check.py [REPO_ROOT]   (default: this file's repository)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    sys.exit("compose_check: python3-yaml (PyYAML) is missing")

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
COMPOSE_FILES = ["docker/docker-compose.yml", "docker/node4.yml"]
DOCKERFILE = "docker/rocketmq/Dockerfile"
URL = "http://10.88.0.1:18081/"

# podman-compose 1.0.3, podman_compose.py: var_re and rec_subs's convert(), verbatim in effect
PODMAN_COMPOSE_103_RE = re.compile(
    r"""
    \$(?:
        (?P<escaped>\$) |
        (?P<named>[_a-zA-Z][_a-zA-Z0-9]*) |
        (?:{
            (?P<braced>[_a-zA-Z][_a-zA-Z0-9]*)
            (?:
                (?::?-(?P<default>[^}]+)) |
                (?::?\?(?P<err>[^}]+))
            )?
        })
    )
""",
    re.VERBOSE,
)


def podman_compose_103(text, env):
    def convert(m):
        if m.group("escaped") is not None:
            return "$"
        value = env.get(m.group("named") or m.group("braced"))
        if value is not None:
            return value
        if m.group("err") is not None:
            raise ValueError(m.group("err"))
        return m.group("default") or ""

    return PODMAN_COMPOSE_103_RE.sub(convert, text)


NAME = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")


def compose_spec(text, env):
    """Compose Specification interpolation: $$, $VAR, ${VAR}, ${VAR:-d}, ${VAR-d}, ${VAR:?e},
    ${VAR?e}, ${VAR:+r}, ${VAR+r}; an empty default is allowed; anything else is an error."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "$":
            out.append(c)
            i += 1
            continue
        if text.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        if text.startswith("${", i):
            end = text.find("}", i)
            if end < 0:
                raise ValueError(f"unclosed ${{ in {text!r}")
            body = text[i + 2 : end]
            m = NAME.match(body)
            if not m:
                raise ValueError(f"invalid interpolation {text[i:end + 1]!r}")
            name, rest = m.group(0), body[m.end() :]
            value = env.get(name)
            unset_or_empty = not value
            if rest == "":
                out.append(value or "")
            elif rest.startswith(":-"):
                out.append(compose_spec(rest[2:], env) if unset_or_empty else value)
            elif rest.startswith("-"):
                out.append(compose_spec(rest[1:], env) if value is None else value)
            elif rest.startswith(":?") or rest.startswith("?"):
                if unset_or_empty if rest.startswith(":") else value is None:
                    raise ValueError(rest.lstrip(":?"))
                out.append(value)
            elif rest.startswith(":+"):
                out.append("" if unset_or_empty else compose_spec(rest[2:], env))
            elif rest.startswith("+"):
                out.append("" if value is None else compose_spec(rest[1:], env))
            else:
                raise ValueError(f"invalid interpolation {text[i:end + 1]!r}")
            i = end + 1
            continue
        m = NAME.match(text, i + 1)
        if not m:
            raise ValueError(f"lone $ in {text!r} (write $$)")
        out.append(env.get(m.group(0)) or "")
        i = m.end()
    return "".join(out)


INSTALLED_RENDER = r"""
import json, sys
import podman_compose
req = json.load(sys.stdin)
print(json.dumps(podman_compose.rec_subs(req["compose"], req["env"])))
"""


def installed_podman_compose():
    """The installed podman-compose's own rec_subs, run by the interpreter its script names
    (it need not be the python3 running this check)."""
    exe = shutil.which("podman-compose")
    if not exe:
        return None
    with open(exe, "rb") as f:
        first = f.readline().decode(errors="replace")
    if not first.startswith("#!"):
        return None
    interp = first[2:].split()

    def render_whole(compose, env):
        r = subprocess.run(interp + ["-c", INSTALLED_RENDER], input=json.dumps({"compose": compose, "env": env}),
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise ValueError(f"{exe}: {r.stderr.strip()}")
        return json.loads(r.stdout)

    return render_whole


def render(node, sub, env):
    """Values only, as both engines do (keys are never interpolated)."""
    if isinstance(node, dict):
        return {k: render(v, sub, env) for k, v in node.items()}
    if isinstance(node, list):
        return [render(v, sub, env) for v in node]
    if isinstance(node, str):
        return sub(node, env)
    return node


def strings(node, path=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from strings(v, f"{path}.{k}")
    elif isinstance(node, list):
        for n, v in enumerate(node):
            yield from strings(v, f"{path}[{n}]")
    elif isinstance(node, str):
        yield path, node


def build_args(compose):
    for name, svc in (compose.get("services") or {}).items():
        build = (svc or {}).get("build")
        if isinstance(build, dict) and build.get("args") is not None:
            args = build["args"]
            if isinstance(args, list):  # ["KEY=VALUE", ...]
                args = dict(a.split("=", 1) if "=" in a else (a, None) for a in args)
            yield name, args


def mirror_step(dockerfile_text):
    """The rocketmq Dockerfile's MAVEN_MIRROR `case ... esac`, as a shell script."""
    joined = dockerfile_text.replace("\\\n", "")  # a Dockerfile line continuation
    m = re.search(r'case "\$MAVEN_MIRROR" in.*?\besac\b', joined, re.S)
    return m.group(0) if m else None


def run_mirror_step(step, value, settings):
    script = step.replace("/tmp/settings.xml", settings)
    r = subprocess.run(["sh", "-c", script], env={"MAVEN_MIRROR": value, "PATH": os.environ.get("PATH", "")},
                       capture_output=True, text=True)
    return r.returncode, r.stderr


def self_test(failures):
    """The renderers behave as documented, so the checks below cannot pass by accident."""
    cases = [
        ("${M:-}", {}, "${M:-}", ""),  # the 1.0.3 pitfall
        ("${M:-none}", {}, "none", "none"),
        ("${M:-none}", {"M": ""}, "", "none"),  # 1.0.3 substitutes a set, empty value as is
        ("${M:-none}", {"M": "u"}, "u", "u"),
        ("${M-d}", {"M": ""}, "", ""),
        ("$$M ${M}", {"M": "u"}, "$M u", "$M u"),
    ]
    for text, env, want_pc, want_spec in cases:
        for label, sub, want in (("podman-compose 1.0.3", podman_compose_103, want_pc),
                                 ("compose spec", compose_spec, want_spec)):
            got = sub(text, env)
            if got != want:
                failures.append(f"self-test: {label} renders {text!r} with {env} as {got!r}, expected {want!r}")


def main():
    failures = []
    self_test(failures)
    renderers = [("podman-compose 1.0.3", podman_compose_103), ("compose spec", compose_spec)]
    installed = installed_podman_compose()
    if installed:
        renderers.append(("installed podman-compose", None))
    envs = [("unset", {}), ("empty", {"MAVEN_MIRROR": ""}), ("a URL", {"MAVEN_MIRROR": URL})]
    with open(os.path.join(ROOT, DOCKERFILE)) as f:
        step = mirror_step(f.read())
    if step is None:
        failures.append(f"{DOCKERFILE}: no `case \"$MAVEN_MIRROR\" in ... esac` step that checks the value")
    rendered_mirrors = set()
    checked_args = 0
    for rel in COMPOSE_FILES:
        with open(os.path.join(ROOT, rel)) as f:
            compose = yaml.safe_load(f)
        for label, sub in renderers:
            for env_label, env in envs:
                where = f"{rel} ({label}, MAVEN_MIRROR {env_label})"
                try:
                    out = render(compose, sub, env) if sub else installed(compose, env)
                except ValueError as e:
                    failures.append(f"{where}: does not render: {e}")
                    continue
                for path, value in strings(out):
                    if "${" in value:
                        failures.append(f"{where}: {path} = {value!r} still holds a variable")
                for svc, args in build_args(out):
                    if "MAVEN_MIRROR" not in args:
                        continue
                    checked_args += 1
                    got = args["MAVEN_MIRROR"]
                    rendered_mirrors.add(got)
                    want = {URL} if env.get("MAVEN_MIRROR") else {"none", ""}
                    if got not in want:
                        failures.append(f"{where}: service {svc} gets MAVEN_MIRROR={got!r}, "
                                        f"expected one of {sorted(want)}")
    if checked_args == 0:
        failures.append("no build argument MAVEN_MIRROR found in the compose files")
    with tempfile.TemporaryDirectory() as tmp:
        if step is None:
            rendered_mirrors = set()
        settings = os.path.join(tmp, "settings.xml")
        for value in sorted(rendered_mirrors):
            rc, err = run_mirror_step(step, value, settings)
            text = open(settings).read() if os.path.exists(settings) else ""
            if rc != 0:
                failures.append(f"{DOCKERFILE}: mirror step refuses MAVEN_MIRROR={value!r}: {err.strip()}")
            elif (f"<url>{value}</url>" in text) != value.startswith("http"):
                failures.append(f"{DOCKERFILE}: MAVEN_MIRROR={value!r} gives settings {text.strip()!r}")
            if os.path.exists(settings):
                os.unlink(settings)
        for value in ("${MAVEN_MIRROR:-}", "mirror.example") if step else ():
            rc, err = run_mirror_step(step, value, settings)
            if rc == 0 or "MAVEN_MIRROR" not in err:
                failures.append(f"{DOCKERFILE}: mirror step accepts MAVEN_MIRROR={value!r} "
                                f"(exit {rc}, stderr {err.strip()!r}); it must refuse it with a message")
    for f in failures:
        print("FAILED:", f)
    names = ", ".join(label for label, _ in renderers)
    print(f"compose_check: {len(COMPOSE_FILES)} files x {names}: {checked_args} MAVEN_MIRROR build arguments, "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
