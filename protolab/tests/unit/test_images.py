"""The locally bootstrapped base image is made like the published one: no downloaded packages, no package
lists, and apt set to keep none (so the images on it carry no package files)."""

from __future__ import annotations

from pathlib import Path

from protolab import images


def test_a_bootstrapped_tree_is_left_as_the_published_base_is(tmp_path: Path):
    for f in ("var/cache/apt/archives/libc6_2.36_amd64.deb", "var/cache/apt/pkgcache.bin",
              "var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_InRelease", "var/lib/apt/lists/lock",
              "var/cache/apt/archives/lock", "usr/bin/apt"):  # fmt: skip
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_bytes(b"x")
    (tmp_path / "var/lib/apt/lists/partial").mkdir()
    (tmp_path / "etc/apt/apt.conf.d").mkdir(parents=True)
    images._as_published(tmp_path)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["etc/apt/apt.conf.d/docker-clean", "usr/bin/apt", "var/cache/apt/archives/lock"], left
    assert (tmp_path / "var/lib/apt/lists/partial").is_dir()  # apt's own folders stay
    clean = (tmp_path / "etc/apt/apt.conf.d/docker-clean").read_text()
    assert 'Dir::Cache::pkgcache "";' in clean and "rm -f /var/cache/apt/archives/*.deb" in clean
