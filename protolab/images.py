"""Container images: bootstrap the base offline if needed, build the agent, build labelled images.

Dockerfiles stay conventional (`FROM debian:bookworm`). When no registry can provide the base image,
it is made locally with debootstrap + `docker import`, and we say so. Each image is labelled with the git
commit and a hash of everything that goes into it; an image whose content hash is current is not rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

from .environment import git_commit
from .errors import ImageError
from .shell import CommandError, ok, run

REPO = Path(__file__).resolve().parent.parent
IMAGES = REPO / "images"
AGENTS = REPO / "agents"
BASE = "debian:bookworm"
MIRROR = os.environ.get("PROTOLAB_DEBIAN_MIRROR", "http://deb.debian.org/debian")
HASH_LABEL = "protolab.content-hash"
NAMES = {"node": "protolab/node:latest", "monitor": "protolab/monitor:latest"}


def say(msg: str) -> None:
    print(f"[images] {msg}", flush=True)


def image_label(ref: str, label: str) -> str | None:
    out = run(["docker", "image", "inspect", "--format", f'{{{{index .Config.Labels "{label}"}}}}', ref], check=False)
    return out.strip() or None


def image_id(ref: str) -> str | None:
    return run(["docker", "image", "inspect", "--format", "{{.Id}}", ref], check=False).strip() or None


def ensure_base() -> None:
    if image_id(BASE):
        return
    say(f"{BASE} is not here; trying the registry")
    if ok(["docker", "pull", BASE], timeout=60):
        return
    if not shutil.which("debootstrap"):
        raise ImageError(f"cannot pull {BASE} and debootstrap is not installed (run `make setup`)")
    t0 = time.monotonic()
    say(f"no registry reachable: bootstrapping {BASE} locally with debootstrap from {MIRROR} (about a minute)")
    with tempfile.TemporaryDirectory(prefix="protolab-rootfs-") as root:
        run(["debootstrap", "--variant=minbase", "bookworm", root, MIRROR], timeout=900)
        _as_published(Path(root))
        run(["sh", "-c", 'tar -C "$1" -c . | docker import - "$2"', "sh", root, BASE], timeout=300)
    say(f"bootstrapped {BASE} in {time.monotonic() - t0:.0f}s")


# What the published debian images carry so that an image's `apt-get install` layer holds no package files
# (debuerreotype's docker-clean): the .deb files and the binary caches deleted after every dpkg run and update.
_RM_DEBS = '"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"'
APT_DOCKER_CLEAN = (
    f"DPkg::Post-Invoke {{ {_RM_DEBS}; }};\nAPT::Update::Post-Invoke {{ {_RM_DEBS}; }};\n"
    'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n'
)


def _as_published(root: Path) -> None:
    """A debootstrapped tree made like the published base image: without the packages debootstrap downloaded
    and the package lists (about 80 MB that every image on it, and every testbed engine it is copied to, would
    carry), and with apt set to keep none."""
    for pattern in ("var/cache/apt/archives/*.deb", "var/cache/apt/*.bin", "var/lib/apt/lists/*"):
        for p in root.glob(pattern):
            if p.is_file() and not p.is_symlink():
                p.unlink()
    (root / "etc/apt/apt.conf.d/docker-clean").write_text(APT_DOCKER_CLEAN)


def _hash_tree(h: hashlib._Hash, root: Path, patterns: tuple[str, ...]) -> None:
    for p in sorted(root.rglob("*")):
        if p.is_file() and any(p.match(pat) for pat in patterns) and "testdata" not in p.parts:
            h.update(str(p.relative_to(REPO)).encode())
            h.update(p.read_bytes())


def content_hash(name: str) -> str:
    h = hashlib.sha256()
    _hash_tree(h, IMAGES / name, ("Dockerfile", "*.yml", "*.yaml", "*.json", ".dockerignore"))
    if name == "node":
        _hash_tree(h, AGENTS, ("*.go", "*.c", "*.h", "go.mod", "go.sum"))
    return h.hexdigest()[:16]


# static; the node image (agent, dishost) and the host (linkem) use them
BINARIES = (
    "protolab-agent",
    "protolab-linkem",
    "protolab-nicfilter",
    "protolab-dishost",
    "protolab-converter",
    "protolab-spims",
    "protolab-tp4",
)
# built with cgo: the DIS host's ASN.1 transfer syntaxes are asn1c's C (agents/syntax/asn1c)
CGO_BINARIES = ("protolab-dishost",)


def build_agent() -> Path:
    """Build the Go programs into images/node/bin (the image's build context)."""
    out = IMAGES / "node" / "bin"
    out.mkdir(parents=True, exist_ok=True)
    rev = git_commit()["commit"][:12]
    for name in BINARIES:
        env, tags, ext = ["CGO_ENABLED=0", "GOTOOLCHAIN=local"], [], ""
        if name in CGO_BINARIES:  # static all the same: glibc linked in, Go's resolver and user lookup
            env, tags = ["CGO_ENABLED=1", "GOTOOLCHAIN=local"], ["-tags", "netgo,osusergo"]
            ext = " -linkmode external -extldflags -static"
        run(["env", "-C", str(AGENTS), *env, "go", "build", "-trimpath", *tags, "-ldflags",
             f"-s -w -X main.revision={rev}{ext}", "-o", str(out / name), f"./cmd/{name}"], timeout=600)  # fmt: skip
    return out


def build(name: str, force: bool = False) -> bool:
    """Build images/<name> unless its content hash is current; return whether it built."""
    ref, want = NAMES[name], content_hash(name)
    if name == "node" and not all((IMAGES / "node" / "bin" / b).exists() for b in BINARIES):
        build_agent()  # a fresh checkout next to a current image still needs the host's binaries
    if not force and image_label(ref, HASH_LABEL) == want:
        return False
    ensure_base()
    t0 = time.monotonic()
    if name == "node":
        build_agent()
    rev = git_commit()["commit"]
    try:
        run(["docker", "build", "-q", "-t", ref, "--label", f"{HASH_LABEL}={want}", "--build-arg", f"REVISION={rev}",
             str(IMAGES / name)], timeout=1200)  # fmt: skip
    except CommandError as exc:
        raise ImageError(f"building {ref} failed:\n{exc.stderr[-3000:]}") from None
    say(f"built {ref} in {time.monotonic() - t0:.1f}s")
    return True


def ensure_grafana() -> bool:
    """Pull the pinned Grafana image (docker-compose.yml) when it is missing and a registry answers; one line
    either way. Grafana is optional: without it `protolab up` runs Prometheus alone and runs offer `--live`."""
    from .monitor import grafana_image

    ref = grafana_image()
    if image_id(ref):
        return True
    if ok(["docker", "pull", ref], timeout=120):
        say(f"pulled {ref}: `protolab up` and every run serve the dashboards")
        return True
    say(f"no registry answered for {ref}: no Grafana here (runs show `--live` on a terminal; Prometheus still runs)")
    return False


def ensure_all(force: bool = False) -> dict[str, str]:
    t0 = time.monotonic()
    built = [n for n in NAMES if build(n, force)]
    if not built:
        say(f"images up to date ({', '.join(NAMES.values())}) [{time.monotonic() - t0:.1f}s]")
    ensure_grafana()
    return {ref: image_id(ref) or "?" for ref in NAMES.values()}
