#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# Checks the deployment files against the security model, for
# tests/check_deploy.c: the Kubernetes DaemonSet (deploy/kubernetes/*.yaml)
# and the two Containerfiles (deploy/containers/).  Prints one line per
# check ("ok ..." or "FAIL ..."), exits 1 if any failed, 2 on bad usage.
# Needs Debian's python3-yaml: run it with /usr/bin/python3.
#
#   check_manifests.py --src DIR [--k8s DIR] [--containers DIR]
#                      [--build DIR] [--segment-bytes N] [--k8s-only]

import argparse
import glob
import os
import re
import subprocess
import sys

import yaml

EXPORTER_UID = 65534
SHM_NAME = "/zernel"
# What the collector may be granted, and what it cannot do without.
COLLECTOR_ALLOWED_CAPS = {"BPF", "PERFMON", "SYS_ADMIN", "SYS_RESOURCE",
                          "SYS_PTRACE", "DAC_READ_SEARCH"}
COLLECTOR_REQUIRED_CAPS = {"BPF", "PERFMON", "SYS_PTRACE"}
PORTS = {"metrics": 9091, "feed": 9092}

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1
    return ok


def quantity_bytes(q):
    """Kubernetes quantity ("64Mi", "100M", "1048576") in bytes, or None."""
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?", str(q).strip())
    if not m:
        return None
    mult = {None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
            "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[m.group(2)]
    return int(m.group(1)) * mult


def load_docs(k8s_dir):
    docs = []
    for path in sorted(glob.glob(os.path.join(k8s_dir, "*.yaml"))):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc is not None:
                    docs.append((os.path.basename(path), doc))
    return docs


def arg_after(args, flag):
    if flag in args and args.index(flag) + 1 < len(args):
        return args[args.index(flag) + 1]
    return None


def check_common_container(c, name):
    sc = c.get("securityContext") or {}
    check(sc.get("privileged") is not True, f"{name}: not privileged")
    drop = (sc.get("capabilities") or {}).get("drop") or []
    check("ALL" in drop, f"{name}: capabilities drop ALL")
    check(sc.get("readOnlyRootFilesystem") is True, f"{name}: readOnlyRootFilesystem")
    check(((c.get("resources") or {}).get("limits") or {}).get("memory") is not None,
          f"{name}: memory limit set")
    return sc


def check_daemonset(docs, segment_bytes):
    for f, d in docs:
        if d.get("kind") == "Kustomization":  # kustomize's own file, not an object
            continue
        check(all(k in d for k in ("apiVersion", "kind", "metadata")) and
              (d.get("metadata") or {}).get("name"),
              f"{f}: {d.get('kind', '?')} has apiVersion, kind, metadata.name")
    kust = [d for _, d in docs if d.get("kind") == "Kustomization"]
    for k in kust:
        listed = set(k.get("resources") or [])
        files = {f for f, d in docs if d.get("kind") != "Kustomization"}
        check(listed == files, f"kustomization lists every manifest ({sorted(files)})")
    ds = [d for _, d in docs if d.get("kind") == "DaemonSet"]
    if not check(len(ds) == 1, "exactly one DaemonSet"):
        return
    ds = ds[0]
    check(ds.get("apiVersion") == "apps/v1", "DaemonSet apiVersion apps/v1")
    ns = [d for _, d in docs if d.get("kind") == "Namespace"]
    check(any(n["metadata"].get("name") == ds["metadata"].get("namespace") for n in ns),
          "DaemonSet's namespace is defined")
    spec = ds.get("spec") or {}
    tmpl = spec.get("template") or {}
    labels = (tmpl.get("metadata") or {}).get("labels") or {}
    sel = (spec.get("selector") or {}).get("matchLabels") or {}
    check(sel and all(labels.get(k) == v for k, v in sel.items()),
          "selector matches the pod labels")

    ann = (tmpl.get("metadata") or {}).get("annotations") or {}
    check(ann.get("prometheus.io/scrape") == "true", "annotation prometheus.io/scrape \"true\"")
    check(ann.get("prometheus.io/port") == str(PORTS["metrics"]),
          "annotation prometheus.io/port \"9091\"")
    check(ann.get("prometheus.io/path") == "/metrics", "annotation prometheus.io/path /metrics")

    pod = tmpl.get("spec") or {}
    check(pod.get("hostPID") is True, "pod: hostPID (discovery reads the node's /proc)")
    check(pod.get("hostNetwork") is not True, "pod: no hostNetwork")
    check(pod.get("hostIPC") is not True, "pod: no hostIPC")
    check(pod.get("automountServiceAccountToken") is False,
          "pod: no service account token (Zernel never calls the API)")
    containers = {c.get("name"): c for c in pod.get("containers") or []}
    if not check(set(containers) == {"collector", "exporter"},
                 "pod: two containers, collector and exporter"):
        return
    vols = {v.get("name"): v for v in pod.get("volumes") or []}

    # The shared segment: a memory-backed emptyDir with a size limit.
    col, exp = containers["collector"], containers["exporter"]
    shm_col = [m for m in col.get("volumeMounts") or [] if m.get("mountPath") == "/dev/shm"]
    shm_exp = [m for m in exp.get("volumeMounts") or [] if m.get("mountPath") == "/dev/shm"]
    if check(len(shm_col) == 1 and len(shm_exp) == 1, "both containers mount /dev/shm"):
        check(shm_col[0]["name"] == shm_exp[0]["name"], "/dev/shm is the same volume in both")
        check(shm_exp[0].get("readOnly") is True, "exporter: /dev/shm mounted readOnly")
        check(shm_col[0].get("readOnly") is not True, "collector: /dev/shm writable")
        ed = (vols.get(shm_col[0]["name"]) or {}).get("emptyDir")
        if check(ed is not None, "/dev/shm volume is an emptyDir"):
            check(ed.get("medium") == "Memory", "emptyDir medium: Memory")
            size = quantity_bytes(ed.get("sizeLimit", ""))
            check(size is not None, "emptyDir has a sizeLimit")
            if size is not None and segment_bytes:
                check(size >= segment_bytes,
                      f"sizeLimit {size} fits the default segment ({segment_bytes} bytes)")

    # Collector: capabilities, never privileged.
    sc = check_common_container(col, "collector")
    add = set((sc.get("capabilities") or {}).get("add") or [])
    add = {a[4:] if a.startswith("CAP_") else a for a in add}
    check(add <= COLLECTOR_ALLOWED_CAPS,
          f"collector: adds only {sorted(COLLECTOR_ALLOWED_CAPS)} (adds {sorted(add)})")
    check(COLLECTOR_REQUIRED_CAPS <= add,
          f"collector: adds {sorted(COLLECTOR_REQUIRED_CAPS)}")
    for path in ("/sys/kernel/btf", "/sys/kernel/tracing", "/var/log/pods", "/var/log/containers"):
        m = [m for m in col.get("volumeMounts") or [] if m.get("mountPath") == path]
        if check(len(m) == 1, f"collector: mounts {path}"):
            check(m[0].get("readOnly") is True, f"collector: {path} readOnly")
            hp = (vols.get(m[0]["name"]) or {}).get("hostPath") or {}
            check(hp.get("path") == path, f"collector: {path} from the node (hostPath)")
    check(not col.get("ports"), "collector: no ports")

    # Exporter: nobody, nothing else.
    sc = check_common_container(exp, "exporter")
    pod_sc = pod.get("securityContext") or {}
    uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
    check(uid == EXPORTER_UID, f"exporter: runAsUser {EXPORTER_UID}")
    check(sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is True, "exporter: runAsNonRoot")
    check(sc.get("allowPrivilegeEscalation") is False, "exporter: allowPrivilegeEscalation false")
    check(not (sc.get("capabilities") or {}).get("add"), "exporter: adds no capability")
    check((sc.get("capabilities") or {}).get("drop") == ["ALL"], "exporter: drops ALL")
    prof = sc.get("seccompProfile", pod_sc.get("seccompProfile")) or {}
    check(prof.get("type") == "RuntimeDefault", "exporter: seccompProfile RuntimeDefault")
    ports = {p.get("containerPort") for p in exp.get("ports") or []}
    check(set(PORTS.values()) <= ports, "exporter: ports 9091 and 9092")
    ex_args = exp.get("args") or []
    for flag, port in (("--metrics-listen", PORTS["metrics"]), ("--ws-listen", PORTS["feed"])):
        v = arg_after(ex_args, flag)
        check(v is not None and v.endswith(f":{port}"), f"exporter: {flag} on port {port}")

    # Both name the same segment.
    check(arg_after(col.get("args") or [], "--shm") == SHM_NAME and
          arg_after(ex_args, "--shm") == SHM_NAME, f"both use --shm {SHM_NAME}")


def parse_containerfile(path):
    """Stages as dicts: base, packages installed, make targets, copies, user, entrypoint."""
    with open(path) as f:
        text = f.read().replace("\\\n", " ")
    stages = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "FROM":
            stages.append({"from": rest.split()[0], "as": rest.split()[-1] if " AS " in
                           rest.upper() else None, "pkgs": set(), "run": [], "copy": [],
                           "user": None, "entrypoint": None})
        elif not stages:
            continue
        elif word == "RUN":
            stages[-1]["run"].append(rest)
            for m in re.finditer(r"apt-get install ([^&;]*)", rest):
                stages[-1]["pkgs"] |= {w for w in m.group(1).split() if not w.startswith("-")}
        elif word == "COPY":
            stages[-1]["copy"].append(rest.split())
        elif word == "USER":
            stages[-1]["user"] = rest.strip()
        elif word == "ENTRYPOINT":
            stages[-1]["entrypoint"] = yaml.safe_load(rest)
    return stages


def makefile_build_deps(src):
    with open(os.path.join(src, "Makefile")) as f:
        text = f.read().replace("\\\n", " ")
    m = re.search(r"^BUILD_DEPS\s*:=(.*)$", text, re.M)
    return set(m.group(1).split()) if m else set()


def runtime_packages(binary):
    """Debian packages that hold the shared libraries binary needs."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    pkgs = set()
    for line in out.splitlines():
        m = re.search(r"=> (/\S+)", line)
        if not m:
            continue
        lib = os.path.realpath(m.group(1))
        for cand in (lib, re.sub(r"^/usr/lib/", "/lib/", lib)):
            r = subprocess.run(["dpkg", "-S", cand], capture_output=True, text=True)
            if r.returncode == 0:
                pkgs.add(r.stdout.split(":")[0])
                break
        else:
            pkgs.add("?" + lib)
    return pkgs


def check_containerfile(path, prog, src, build, needs_bpf):
    name = os.path.basename(path)
    stages = parse_containerfile(path)
    if not check(len(stages) == 2, f"{name}: two stages (build, runtime)"):
        return
    b, r = stages
    check(b["from"].endswith("debian:12"), f"{name}: builds on debian:12")
    check(r["from"].endswith("debian:12") or r["from"].endswith("debian:12-slim"),
          f"{name}: runs on debian:12")
    # The build stage installs what the Makefile's dependency list says.
    deps = makefile_build_deps(src) - {"check"}
    if not needs_bpf:
        deps -= {"clang", "llvm", "bpftool", "libbpf-dev", "libelf-dev", "zlib1g-dev"}
    check(deps <= b["pkgs"], f"{name}: build stage installs {sorted(deps - b['pkgs']) or 'all'}"
          " of the Makefile's BUILD_DEPS" if deps - b["pkgs"] else
          f"{name}: build stage installs the Makefile's BUILD_DEPS")
    target = None
    for run in b["run"]:
        m = re.search(r"make (BUILD=(\S+)) (\S+)", run)
        if m:
            target = (m.group(2), m.group(3))
    if check(target is not None and target[1] == f"{target[0]}/{prog}",
             f"{name}: builds {prog} with make BUILD=..."):
        # The target exists in the Makefile (dry run, nothing built).
        dry = subprocess.run(["make", "-n", "-C", src, f"BUILD={target[0]}", target[1]],
                             capture_output=True, text=True,
                             env={k: v for k, v in os.environ.items()
                                  if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")})
        check(dry.returncode == 0, f"{name}: `make {target[1]}` is a valid target")
        copied = [c for c in r["copy"] if any(a.startswith("--from=") for a in c)]
        check(any(c[-2] == target[1] for c in copied), f"{name}: runtime copies {target[1]}")
        check(r["entrypoint"] and any(c[-1] == r["entrypoint"][0] for c in copied),
              f"{name}: ENTRYPOINT is the copied binary")
    if prog == "zernel-exporter":
        check(r["user"] in ("65534", "65534:65534", "nobody", "nobody:nogroup"),
              f"{name}: runs as 65534")
    if build and os.access(os.path.join(build, prog), os.X_OK):
        need = runtime_packages(os.path.join(build, prog)) - {"libc6"}
        check(need <= r["pkgs"], f"{name}: runtime installs the libraries {prog} links "
              f"(missing {sorted(need - r['pkgs'])})" if need - r["pkgs"] else
              f"{name}: runtime installs every library {prog} links")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--k8s")
    ap.add_argument("--containers")
    ap.add_argument("--build")
    ap.add_argument("--segment-bytes", type=int, default=0)
    ap.add_argument("--k8s-only", action="store_true", help="skip the Containerfiles")
    a = ap.parse_args()
    k8s = a.k8s or os.path.join(a.src, "deploy", "kubernetes")
    cont = a.containers or os.path.join(a.src, "deploy", "containers")
    try:
        docs = load_docs(k8s)
    except yaml.YAMLError as e:
        check(False, f"YAML parses: {e}")
        docs = []
    if check(len(docs) > 0, f"manifests found in {k8s}"):
        check_daemonset(docs, a.segment_bytes)
    if not a.k8s_only:
        check_containerfile(os.path.join(cont, "Containerfile.collector"), "zernel-collector",
                            a.src, a.build, True)
        check_containerfile(os.path.join(cont, "Containerfile.exporter"), "zernel-exporter",
                            a.src, a.build, False)
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
