"""Cross-check of the DIS ASN.1 codecs: asn1c (Go, agents/syntax/asn1c) and free5gc/aper (aligned PER,
agents/syntax/aper) against asn1tools, both ways.

agents/syntax/testdata/crosscheck/<type>.<syntax> holds what the Go codecs encode for syntax.Samples()
(`go test ./syntax/asn1c ./syntax/aper -run Fixtures -update` rewrites them; Go tests keep them current). asn1tools
compiles the same module independently; each test decodes asn1c's bytes and re-encodes them here.

The other way, agents/syntax/testdata/asn1tools/<type>.<der|ber|uper|per> holds asn1tools' encodings of those
values (run this file, `.venv/bin/python protolab/tests/unit/test_asn1_crosscheck.py`, to rewrite them;
test_asn1tools_vectors_are_current keeps them current), and the Go tests TestDecodesAsn1tools have asn1c (DER,
BER, UPER) and the aper codec (PER) decode each back to syntax.Samples(). asn1tools' BER equals its DER here
(definite lengths, the same REAL form).
"""

import sys
from pathlib import Path
from typing import Any

import asn1tools
import pytest

AGENTS = Path(__file__).resolve().parents[3] / "agents" / "syntax"
MODULE = AGENTS / "asn1" / "DIS.asn"
FIXTURES = AGENTS / "testdata" / "crosscheck"
TYPES = ["entity-state", "fire", "detonation", "collision", "service-request", "resupply-offer",
         "resupply-received", "resupply-cancel", "repair-complete", "repair-response"]  # fmt: skip
VECTORS = AGENTS / "testdata" / "asn1tools"
VECTOR_RULES = ("der", "ber", "uper", "per")  # what the Go codecs decode (aligned PER: the aper codec)
# The two DER encoders disagree on some REALs, and neither is always DER. X.690 11.3.1 wants M odd, F = 0 "and M
# and E shall each be represented in the fewest octets necessary" (N is an unsigned binary number, 8.5.7.5).
# asn1tools 0.169.0 writes a zero octet before a mantissa whose top bit is set (it sizes N as a two's complement
# integer: 100.5 = 201 x 2^-1 as 80 ff 00 c9, where asn1c writes the same); asn1c 0.9.28's asn_double2REAL
# (REAL.c) keeps the zero octet left when it shifts the mantissa right to make it odd (3000.125: 80 fd 00 5d c1,
# 4500.5: 80 ff 00 23 29, -50.5: c0 ff 00 65, 9.75: 80 fe 00 27, where asn1tools writes 80 fd 5d c1 ... 80 fe 27).
# Both are valid BER and both read either; the canonical form (80 ff c9, c0 ff 65) is skinny's writer's
# (agents/syntax/skinny.go appendReal, TestRealEncoding). asn1c's "der" syntax re-encodes and compares, so it
# refuses asn1tools' DER of these types as not-der (TestDecodesAsn1tools). Only these samples differ.
DIVERGENT = {"fire", "detonation"}


def compile_codecs() -> dict[str, Any]:
    return {rules: asn1tools.compile_files(str(MODULE), rules) for rules in ("der", "ber", "uper", "per")}


@pytest.fixture(scope="module")
def codecs():
    return compile_codecs()


def fixture(kind: str, syntax: str) -> bytes:
    return (FIXTURES / f"{kind}.{syntax}").read_bytes()


def choice(codecs, kind):
    return codecs["der"].decode("DISPDU", fixture(kind, "der"))


def vectors(codecs) -> dict[Path, bytes]:
    """asn1tools' encoding of each sample value (decoded from asn1c's DER) in each of VECTOR_RULES, by file."""
    return {VECTORS / f"{kind}.{rules}": codecs[rules].encode("DISPDU", choice(codecs, kind))
            for kind in TYPES for rules in VECTOR_RULES}  # fmt: skip


def test_asn1tools_vectors_are_current(codecs):
    want = vectors(codecs)
    stale = sorted(p.name for p, b in want.items() if not p.is_file() or p.read_bytes() != b)
    extra = sorted(p.name for p in VECTORS.glob("*") if p not in want)
    assert not stale and not extra, (
        f"{VECTORS} is not asn1tools' encoding of the samples (stale {stale}, extra {extra}): "
        f"run .venv/bin/python {Path(__file__).relative_to(AGENTS.parents[1])}"
    )


@pytest.mark.parametrize("kind", TYPES)
def test_value_matches_the_native_pdu(codecs, kind):
    alt, value = choice(codecs, kind)
    raw = fixture(kind, "raw")
    header = value["header"]
    assert header["pduType"] == raw[2] == TYPES.index(kind) + 1
    assert header["exerciseID"] == raw[1]
    assert header["timestamp"] == int.from_bytes(raw[4:8], "big")
    assert header["length"] == len(raw)


@pytest.mark.parametrize("kind", TYPES)
def test_der(codecs, kind):
    asn1c = fixture(kind, "der")
    value = choice(codecs, kind)
    ours = codecs["der"].encode("DISPDU", value)
    assert codecs["der"].decode("DISPDU", ours) == value
    assert (ours == asn1c) == (kind not in DIVERGENT)


def test_der_real_divergence_is_the_known_one(codecs):
    """asn1c's zero octet after making the mantissa odd; asn1tools' (and asn1c's) before a top bit set."""
    asn1c = fixture("detonation", "der")
    value = choice(codecs, "detonation")
    ours = codecs["der"].encode("DISPDU", value)
    assert bytes.fromhex("c0ff0065") in asn1c and bytes.fromhex("c0ff0065") not in ours
    assert bytes.fromhex("8003c0ff65") in ours  # velocity x, -50.5 = -101 x 2^-1, in the fewest octets
    fire = codecs["der"].encode("DISPDU", choice(codecs, "fire"))
    assert bytes.fromhex("800480ff00c9") in fire and bytes.fromhex("800480ff00c9") in fixture("fire", "der")
    assert len(asn1c) - len(ours) == 2  # -50.5 and 9.75 (velocity x and z)


@pytest.mark.parametrize("kind", TYPES)
def test_uper(codecs, kind):
    asn1c = fixture(kind, "uper")
    value = codecs["uper"].decode("DISPDU", asn1c)
    assert value == choice(codecs, kind)
    ours = codecs["uper"].encode("DISPDU", value)
    assert codecs["uper"].decode("DISPDU", ours) == value
    assert (ours == asn1c) == (kind not in DIVERGENT)


@pytest.mark.parametrize("kind", TYPES)
def test_aligned_per(codecs, kind):
    """free5gc/aper's bytes decode to the sample's value; re-encoded by asn1tools they differ at most in REAL
    contents (asn1tools' zero octet before a mantissa whose top bit is set), so equal in length or a few longer."""
    ours = fixture(kind, "per")
    value = codecs["per"].decode("DISPDU", ours)
    assert value == choice(codecs, kind)
    theirs = codecs["per"].encode("DISPDU", value)
    assert codecs["per"].decode("DISPDU", theirs) == value
    assert (ours == theirs) == (len(ours) == len(theirs)), "same length, other octets: not a REAL difference"
    assert 0 <= len(theirs) - len(ours) <= 4, (len(theirs), len(ours))


@pytest.mark.parametrize("kind", TYPES)
def test_ber_reads_skinny_indefinite_lengths(codecs, kind):
    assert codecs["ber"].decode("DISPDU", fixture(kind, "skinny")) == choice(codecs, kind)


@pytest.mark.parametrize("kind", TYPES)
def test_ber_and_aligned_per_round_trip(codecs, kind):
    value = choice(codecs, kind)
    for rules in ("ber", "per"):
        assert codecs[rules].decode("DISPDU", codecs[rules].encode("DISPDU", value)) == value


if __name__ == "__main__":
    VECTORS.mkdir(exist_ok=True)
    for path, data in vectors(compile_codecs()).items():
        path.write_bytes(data)
    sys.exit(0)
