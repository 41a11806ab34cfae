#!/usr/bin/env bash
# The container recipes (containers/Dockerfile, containers/Apptainer.def) cannot be built here (no
# docker, no apptainer, no network), so what can go stale in them is checked instead:
#  1. both build with the project's own scripts: install-deps.sh --build-only, then build.sh;
#  2. Apptainer.def's %files copies every folder the top-level CMakeLists.txt adds (the Dockerfile
#     copies the whole checkout);
#  3. both runtime stages install the same packages, and those cover every library the
#     downscale binary and its CUDA plugin NEED (readelf -d, mapped to Debian packages by dpkg -S);
#  4. every Debian package they name exists in Debian 12 (apt-cache, this machine's release);
#  5. their default GPU architectures are the project's (model/CMakeLists.txt).
#   usage: container_recipes.sh <downscale binary> <source dir>
set -euo pipefail
bin=$1
src=$2
/usr/bin/python3 - "$bin" "$src" <<'PY'
import os, re, subprocess, sys

bin_path, src = sys.argv[1], sys.argv[2]
docker = open(os.path.join(src, "containers/Dockerfile")).read()
apptainer = open(os.path.join(src, "containers/Apptainer.def")).read()
cmake = open(os.path.join(src, "CMakeLists.txt")).read()
failures = []
def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)

# 1. the project's scripts
for name, text in (("Dockerfile", docker), ("Apptainer.def", apptainer)):
    check("install-deps.sh --build-only" in text, f"{name} installs the build packages with scripts/install-deps.sh --build-only")
    check("scripts/build.sh" in text, f"{name} builds with scripts/build.sh")
    # .git is not copied in: the revision --version reports comes as DOWNSCALE_REVISION.
    check("-DDOWNSCALE_REVISION=" in text, f"{name} gives build.sh the revision (-DDOWNSCALE_REVISION)")

# 2. Apptainer's %files against add_subdirectory()
files = re.search(r"Stage: build\s*\n\s*%files\n(.*?)\n\s*\n", apptainer, re.S).group(1)
copied = {line.split()[0] for line in files.strip().splitlines()}
needed = set(re.findall(r"^\s*add_subdirectory\((\w+)\)", cmake, re.M)) - {"tests"}  # tests: -DDOWNSCALE_BUILD_TESTS=OFF
needed |= {"CMakeLists.txt", "configs", "scripts"} | ({"cmake"} if os.path.isdir(os.path.join(src, "cmake")) else set())
check(needed <= copied, f"Apptainer.def %files copies {sorted(needed)}" + (f" (missing {sorted(needed - copied)})" if needed - copied else ""))
# ... and every path it copies exists: apptainer build stops at a missing %files source.
absent = sorted(p for p in copied if not os.path.exists(os.path.join(src, p)))
check(not absent, "every Apptainer.def %files source exists in the repository" + (f" (absent: {absent})" if absent else ""))

# 3. runtime packages
def runtime_packages(text, stage_start):
    stage = text[text.index(stage_start):]
    m = re.search(r"apt-get install -y --no-install-recommends \\\n(.*?)(?:\n\s*&&|\n\s*apt-get|\n\s*\n)", stage.split("wget -q", 1)[1], re.S)
    words = re.findall(r"[a-z0-9][a-z0-9.+-]*(?:\$\{[A-Z_]+\}[a-z0-9.+-]*)*", m.group(1).replace("\\\n", " "))
    # NCCL's optional pin (Dockerfile only) is no package.
    return {re.sub(r"\$\{NCCL_VERSION.*", "", w) for w in words if w}
rt_docker = runtime_packages(docker, "FROM debian:${DEBIAN}-slim")
rt_apptainer = runtime_packages(apptainer, "Stage: runtime")
check(rt_docker == rt_apptainer, "the runtime stages install the same packages" +
      ("" if rt_docker == rt_apptainer else f" (Dockerfile only: {sorted(rt_docker - rt_apptainer)}, Apptainer.def only: {sorted(rt_apptainer - rt_docker)})"))
# The binary and, where built, its CUDA plugin (loaded from ../lib at run time).
plugin = os.path.join(os.path.dirname(os.path.abspath(bin_path)), "..", "lib", "libdownscale_cuda.so")
needed_libs = []
for elf in [bin_path] + ([plugin] if os.path.exists(plugin) else []):
    for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", subprocess.run(["readelf", "-d", elf], capture_output=True, text=True, check=True).stdout):
        if lib not in needed_libs:
            needed_libs.append(lib)
base = {"libc6", "libstdc++6", "libgcc-s1"}  # in debian:bookworm-slim
cuda = {"libcudart": "cuda-cudart-", "libcublas": "libcublas-", "libcublasLt": "libcublas-", "libcudnn": "libcudnn9-cuda-", "libnccl": "libnccl2"}
# One dpkg -S for all (each call reads every file list: ~0.3 s).
owners = {}
out = subprocess.run(["dpkg", "-S"] + [f"*/{lib}" for lib in needed_libs], capture_output=True, text=True).stdout
for line in out.splitlines():
    pkg, _, path = line.partition(": ")
    for p in pkg.split(", "):
        owners.setdefault(os.path.basename(path), set()).add(p.split(":")[0])
for lib in needed_libs:
    stem = lib.split(".so")[0]
    if stem in cuda:
        ok = any(p.startswith(cuda[stem]) for p in rt_docker)
        check(ok, f"{lib}: from NVIDIA's repository ({cuda[stem]}...)")
        continue
    pkgs = owners.get(lib, set())
    check(bool(pkgs & (rt_docker | base)), f"{lib}: {', '.join(sorted(pkgs)) or 'no package'} in the runtime stage")

# 4. the Debian names exist (the CUDA ones live in NVIDIA's repository, not checkable offline)
debian = sorted(p for p in rt_docker if "${" not in p and not p.startswith("libnccl"))
lists = [f for f in os.listdir("/var/lib/apt/lists") if "_Packages" in f] if os.path.isdir("/var/lib/apt/lists") else []
if lists:
    r = subprocess.run(["apt-cache", "show", "--no-all-versions"] + debian, capture_output=True, text=True)
    known = set(re.findall(r"^Package: (\S+)", r.stdout, re.M))
    for p in debian:
        check(p in known, f"{p} is a Debian 12 package")
else:
    print("note: no apt package lists on this machine (apt-get update): package names not checked")

# 5. GPU architectures
default = re.search(r'DOWNSCALE_CUDA_ARCHITECTURES (\S+) CACHE', open(os.path.join(src, "model/CMakeLists.txt")).read()).group(1)
check(f"CUDA_ARCHITECTURES={default}" in docker and f"CUDA_ARCHITECTURES={default}" in apptainer,
      f"both recipes default to the project's CUDA architectures ({default})")

if failures:
    sys.exit(f"container recipes: {len(failures)} problem(s)")
print("container recipes: ok")
PY
