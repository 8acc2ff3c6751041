#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs the DaemonSet's pod on one host with podman, every setting taken
# from deploy/kubernetes/daemonset.yaml:
#
#   zernel-pod.py up   [--manifest FILE] [--name NAME] [--publish PORT=ADDR:HOSTPORT]...
#   zernel-pod.py down [--name NAME]
#   zernel-pod.py show [...]        the podman commands `up` runs, not run
#
# `podman kube play` of Debian 12's podman (4.3) takes no DaemonSet, drops
# hostPID and backs an emptyDir with disk, so this maps the pod template
# itself:
#   hostPID                      --pid host on every container, as in Kubernetes
#   emptyDir medium: Memory      a tmpfs volume of sizeLimit, mode 1777
#   hostPath                     a bind mount (readOnly kept); DirectoryOrCreate
#                                made, Directory required, as the kubelet does
#   securityContext              --user, --cap-drop/--cap-add, --privileged,
#                                --read-only (no extra tmpfs), no-new-privileges,
#                                seccomp RuntimeDefault = podman's default profile
#   resources.limits.memory      --memory
#   terminationGracePeriodSeconds --stop-timeout
#   ports                        published on 127.0.0.1 (or as --publish says)
# A setting it does not know how to carry is an error, never silently
# dropped.  The HTTP probes are not carried: the exporter image holds no
# program to run them (Kubernetes runs them from the kubelet).
# Needs Debian's python3-yaml; run it with /usr/bin/python3.

import argparse
import os
import re
import subprocess
import sys

import yaml

DEFAULT_MANIFEST = "deploy/kubernetes/daemonset.yaml"
IMAGE_PREFIX = "localhost/"

KNOWN_POD = {"hostPID", "hostNetwork", "hostIPC", "automountServiceAccountToken",
             "enableServiceLinks", "terminationGracePeriodSeconds", "nodeSelector",
             "tolerations", "containers", "volumes"}
KNOWN_CONTAINER = {"name", "image", "imagePullPolicy", "args", "securityContext", "resources",
                   "volumeMounts", "ports", "readinessProbe", "livenessProbe"}
KNOWN_SECURITY = {"privileged", "runAsUser", "runAsGroup", "runAsNonRoot",
                  "allowPrivilegeEscalation", "readOnlyRootFilesystem", "capabilities",
                  "seccompProfile"}


class ManifestError(Exception):
    pass


def quantity(q):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", str(q))
    if not m:
        raise ManifestError(f"quantity {q!r} not understood")
    return int(m.group(1)) * {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}[m.group(2)]


def pod_template(path):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    ds = [d for d in docs if d.get("kind") == "DaemonSet"]
    if len(ds) != 1:
        raise ManifestError(f"{path}: expected one DaemonSet, found {len(ds)}")
    return ds[0]["spec"]["template"]


def unknown(what, have, known):
    extra = set(have) - known
    if extra:
        raise ManifestError(f"{what}: cannot carry {sorted(extra)} to podman")


def volume_names(name, spec):
    return {v["name"]: f"{name}-{v['name']}" for v in spec.get("volumes", [])}


def commands(name, template, publish):
    """The podman commands that make the pod, in order."""
    spec = template["spec"]
    unknown("pod spec", spec, KNOWN_POD)
    if spec.get("hostNetwork") or spec.get("hostIPC"):
        raise ManifestError("hostNetwork/hostIPC: not carried")
    cmds = []
    vols = volume_names(name, spec)
    binds = {}
    for v in spec.get("volumes", []):
        if "emptyDir" in v:
            ed = v["emptyDir"] or {}
            cmd = ["podman", "volume", "create"]
            if ed.get("medium") == "Memory":
                # tmpfs's nr_blocks: podman 4.3 takes a "size" option for a
                # disk quota and refuses it on tmpfs.
                opts = "mode=1777"
                if "sizeLimit" in ed:
                    page = os.sysconf("SC_PAGE_SIZE")
                    opts += f",nr_blocks={(quantity(ed['sizeLimit']) + page - 1) // page}"
                cmd += ["--opt", "type=tmpfs", "--opt", "device=tmpfs", "--opt", f"o={opts}"]
            cmds.append(cmd + [vols[v["name"]]])
        elif "hostPath" in v:
            hp = v["hostPath"]
            if hp.get("type", "") not in ("", "Directory", "DirectoryOrCreate"):
                raise ManifestError(f"volume {v['name']}: hostPath type {hp['type']} not carried")
            binds[v["name"]] = hp["path"]
        else:
            raise ManifestError(f"volume {v['name']}: only emptyDir and hostPath are carried")

    labels = [f"--label={k}={val}" for k, val in
              {**template["metadata"].get("labels", {}),
               **template["metadata"].get("annotations", {})}.items()]
    pod = ["podman", "pod", "create", "--name", name, "--share", "net,ipc,uts"] + labels
    for c in spec["containers"]:
        for p in c.get("ports", []):
            host = publish.get(p.get("name")) or publish.get(str(p["containerPort"])) or \
                f"127.0.0.1:{p['containerPort']}"
            pod += ["--publish", f"{host}:{p['containerPort']}/{p.get('protocol', 'TCP').lower()}"]
    cmds.append(pod)

    for c in spec["containers"]:
        unknown(f"container {c['name']}", c, KNOWN_CONTAINER)
        sc = c.get("securityContext", {})
        unknown(f"container {c['name']} securityContext", sc, KNOWN_SECURITY)
        cmd = ["podman", "create", "--pod", name, "--name", f"{name}-{c['name']}"]
        if spec.get("hostPID"):
            cmd += ["--pid", "host"]
        if "terminationGracePeriodSeconds" in spec:
            cmd += ["--stop-timeout", str(spec["terminationGracePeriodSeconds"])]
        uid, gid = sc.get("runAsUser"), sc.get("runAsGroup")
        if sc.get("runAsNonRoot") and uid in (None, 0):
            raise ManifestError(f"container {c['name']}: runAsNonRoot with user {uid}")
        if uid is not None:
            cmd += ["--user", f"{uid}:{gid if gid is not None else uid}"]
        if sc.get("privileged"):
            cmd.append("--privileged")
        caps = sc.get("capabilities", {})
        for cap in caps.get("drop", []):
            cmd += ["--cap-drop", cap]
        for cap in caps.get("add", []):
            cmd += ["--cap-add", cap]
        if sc.get("readOnlyRootFilesystem"):
            cmd += ["--read-only", "--read-only-tmpfs=false"]
        if sc.get("allowPrivilegeEscalation") is False:
            cmd += ["--security-opt", "no-new-privileges"]
        seccomp = sc.get("seccompProfile", {}).get("type", "RuntimeDefault")
        if seccomp == "Unconfined":
            cmd += ["--security-opt", "seccomp=unconfined"]
        elif seccomp != "RuntimeDefault":
            raise ManifestError(f"container {c['name']}: seccompProfile {seccomp} not carried")
        mem = c.get("resources", {}).get("limits", {}).get("memory")
        if mem:
            cmd += ["--memory", str(quantity(mem))]
        for m in c.get("volumeMounts", []):
            ro = ",ro=true" if m.get("readOnly") else ""
            if m["name"] in binds:
                cmd += ["--mount", f"type=bind,src={binds[m['name']]},dst={m['mountPath']}{ro}"]
            elif m["name"] in vols:
                cmd += ["--mount", f"type=volume,src={vols[m['name']]},dst={m['mountPath']}{ro}"]
            else:
                raise ManifestError(f"container {c['name']}: no volume {m['name']}")
        image = c["image"] if "/" in c["image"] else IMAGE_PREFIX + c["image"]
        cmds.append(cmd + [image] + [str(a) for a in c.get("args", [])])
    cmds.append(["podman", "pod", "start", name])
    return cmds


def host_paths(template):
    """What the kubelet does for hostPath volumes: create DirectoryOrCreate, require Directory."""
    for v in template["spec"].get("volumes", []):
        hp = v.get("hostPath")
        if not hp:
            continue
        if hp.get("type") == "DirectoryOrCreate":
            os.makedirs(hp["path"], mode=0o755, exist_ok=True)
        elif hp.get("type") == "Directory" and not os.path.isdir(hp["path"]):
            raise ManifestError(f"volume {v['name']}: hostPath {hp['path']} (type Directory) "
                                "is not a directory on this host")


def down(name, template):
    # Stopping first lets each container's cleanup finish before removal.
    subprocess.run(["podman", "pod", "stop", "--ignore", name],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    subprocess.run(["podman", "pod", "rm", "--force", "--ignore", name],
                   stdout=subprocess.DEVNULL, check=False)
    for vol in volume_names(name, template["spec"]).values():
        # podman 4.3 can deadlock a volume removal against a container's
        # cleanup still running; a removal that hangs is ended and retried.
        for _ in range(5):
            try:
                r = subprocess.run(["podman", "volume", "rm", "--force", vol], timeout=20,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                if r.returncode == 0:
                    break
            except subprocess.TimeoutExpired:
                pass
            if subprocess.run(["podman", "volume", "exists", vol]).returncode != 0:
                break


def main():
    ap = argparse.ArgumentParser(description="Run the Zernel DaemonSet's pod with podman.")
    ap.add_argument("action", choices=("up", "down", "show"))
    ap.add_argument("--manifest", default=DEFAULT_MANIFEST)
    ap.add_argument("--name", default="zernel")
    ap.add_argument("--publish", action="append", default=[],
                    help="PORT=ADDR:HOSTPORT, PORT a port's name or number")
    a = ap.parse_args()
    try:
        template = pod_template(a.manifest)
        publish = dict(p.split("=", 1) for p in a.publish)
        cmds = commands(a.name, template, publish)
    except (ManifestError, OSError, KeyError, ValueError, yaml.YAMLError) as e:
        print(f"zernel-pod: {e}", file=sys.stderr)
        return 1
    if a.action == "show":
        for cmd in cmds:
            print(" ".join(cmd))
        return 0
    down(a.name, template)
    if a.action == "down":
        return 0
    try:
        host_paths(template)
    except (ManifestError, OSError) as e:
        print(f"zernel-pod: {e}", file=sys.stderr)
        return 1
    for cmd in cmds:
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
        if r.returncode != 0:
            print(f"zernel-pod: failed: {' '.join(cmd)}", file=sys.stderr)
            down(a.name, template)
            return 1
    print(f"zernel-pod: pod {a.name} started")
    return 0


if __name__ == "__main__":
    sys.exit(main())
