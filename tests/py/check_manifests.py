#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# Checks the deployment files against the security model, for
# tests/check_deploy.c: the Kubernetes DaemonSet (deploy/kubernetes/*.yaml), the
# PodMonitor of the prometheus-operator overlay
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
    """Global ARG defaults, then stages as dicts: base, packages, runs, copies, user, entrypoint."""
    with open(path) as f:
        text = f.read().replace("\\\n", " ")
    args, stages = {}, []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "ARG" and not stages:
            name, _, default = rest.partition("=")
            args[name.strip()] = default.strip()
        elif word == "FROM":
            base = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), ""), rest.split()[0])
            stages.append({"from": base, "as": rest.split()[-1] if " AS " in
                           rest.upper() else None, "pkgs": set(), "run": [], "copy": [],
                           "user": None, "entrypoint": None})
        elif not stages:
            continue
        elif word == "RUN":
            stages[-1]["run"].append(rest)
            for m in re.finditer(r'apt-get install ([^&;$]*)|pkgs="([^"]*)"', rest):
                words = (m.group(1) or m.group(2)).split()
                stages[-1]["pkgs"] |= {w for w in words if not w.startswith("-")}
        elif word == "COPY":
            stages[-1]["copy"].append(rest.split())
        elif word == "USER":
            stages[-1]["user"] = rest.strip()
        elif word == "ENTRYPOINT":
            stages[-1]["entrypoint"] = yaml.safe_load(rest)
    return stages


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


def check_podmonitor(k8s_dir, docs):
    """The Prometheus Operator overlay: a PodMonitor scraping what the annotations name."""
    over = os.path.join(k8s_dir, "prometheus-operator")
    try:
        odocs = load_docs(over)
    except (OSError, yaml.YAMLError) as e:
        check(False, f"prometheus-operator overlay parses: {e}")
        return
    kust = [d for _, d in odocs if d.get("kind") == "Kustomization"]
    check(len(kust) == 1 and set(kust[0].get("resources") or []) == {"..", "podmonitor.yaml"},
          "prometheus-operator overlay: the base plus podmonitor.yaml")
    pm = [d for _, d in odocs if d.get("kind") == "PodMonitor"]
    if not check(len(pm) == 1, "one PodMonitor"):
        return
    pm = pm[0]
    check(pm.get("apiVersion") == "monitoring.coreos.com/v1",
          "PodMonitor apiVersion monitoring.coreos.com/v1")
    ds = [d for _, d in docs if d.get("kind") == "DaemonSet"]
    if not ds:
        return
    tmpl = ds[0]["spec"]["template"]
    check((pm.get("metadata") or {}).get("namespace") == ds[0]["metadata"].get("namespace"),
          "PodMonitor in the DaemonSet's namespace")
    labels = (tmpl.get("metadata") or {}).get("labels") or {}
    sel = ((pm.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    check(sel and all(labels.get(k) == v for k, v in sel.items()),
          "PodMonitor selects the DaemonSet's pods")
    ann = (tmpl.get("metadata") or {}).get("annotations") or {}
    eps = (pm.get("spec") or {}).get("podMetricsEndpoints") or []
    ports = {p.get("name"): p.get("containerPort") for c in tmpl["spec"].get("containers", [])
             for p in c.get("ports") or []}
    check(len(eps) == 1 and ports.get(eps[0].get("port")) == int(ann.get("prometheus.io/port", 0)),
          "PodMonitor scrapes the annotated port by name")
    check(len(eps) == 1 and eps[0].get("path") == ann.get("prometheus.io/path") and
          eps[0].get("scheme", "http") == ann.get("prometheus.io/scheme", "http"),
          "PodMonitor path and scheme are the annotations'")
    check(len(eps) == 1 and eps[0].get("honorLabels") is True,
          "PodMonitor keeps the workload's pod, namespace and container labels (honorLabels)")


def check_containerfile(path, prog, src, build):
    """A Debian 12 stage installs the libraries and stages the binary; the image is that alone."""
    name = os.path.basename(path)
    stages = parse_containerfile(path)
    if not check(len(stages) == 2, f"{name}: two stages (runtime, image)"):
        return
    r, img = stages
    check(r["from"].endswith("debian:12"), f"{name}: runtime stage on debian:12")
    check(img["from"] == "scratch", f"{name}: image FROM scratch")
    dest = f"/usr/bin/{prog}"
    check(any(c[:-1] == [prog, "stage-root.sh"] for c in r["copy"]) and
          any(f"stage-root.sh /rootfs /stage/{prog} {dest}" in run for run in r["run"]),
          f"{name}: stages {prog} at {dest} with its libraries")
    check(any(c == ["--from=runtime", "/rootfs/", "/"] for c in img["copy"]) and
          len(img["copy"]) == 1, f"{name}: image holds only the staged root")
    check(img["entrypoint"] and img["entrypoint"][0] == dest, f"{name}: ENTRYPOINT is {dest}")
    if prog == "zernel-exporter":
        check(img["user"] in ("65534", "65534:65534", "nobody", "nobody:nogroup"),
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
        check_podmonitor(k8s, docs)
    if not a.k8s_only:
        check_containerfile(os.path.join(cont, "Containerfile.collector"), "zernel-collector",
                            a.src, a.build)
        check_containerfile(os.path.join(cont, "Containerfile.exporter"), "zernel-exporter",
                            a.src, a.build)
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
