"""Cross-check of the DIS ASN.1 codecs: asn1c (Go, agents/syntax/asn1c) against asn1tools.

agents/syntax/testdata/crosscheck/<type>.<syntax> holds what the Go codecs encode for syntax.Samples()
(`go test ./syntax/asn1c -run Fixtures -update` rewrites them; a Go test keeps them current). asn1tools
compiles the same module independently; each test decodes asn1c's bytes and re-encodes them here.
"""

from pathlib import Path

import asn1tools
import pytest

AGENTS = Path(__file__).resolve().parents[3] / "agents" / "syntax"
MODULE = AGENTS / "asn1" / "DIS.asn"
FIXTURES = AGENTS / "testdata" / "crosscheck"
TYPES = ["entity-state", "fire", "detonation", "collision", "service-request", "resupply-offer",
         "resupply-received", "resupply-cancel", "repair-complete", "repair-response"]  # fmt: skip
# asn1c 0.9.28 writes a zero octet before some REAL mantissas whose top bit is clear (3000.125: 80 fd 00 5d c1,
# 4500.5: 80 ff 00 23 29, -50.5: c0 ff 00 65) where asn1tools 0.169.0 writes none (X.690 8.5.7.5: N is an
# unsigned binary integer); both read either. Only the samples of these types have such values.
DIVERGENT = {"fire", "detonation"}


@pytest.fixture(scope="module")
def codecs():
    return {rules: asn1tools.compile_files(str(MODULE), rules) for rules in ("der", "ber", "uper", "per")}


def fixture(kind: str, syntax: str) -> bytes:
    return (FIXTURES / f"{kind}.{syntax}").read_bytes()


def choice(codecs, kind):
    return codecs["der"].decode("DISPDU", fixture(kind, "der"))


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
    asn1c = fixture("detonation", "der")
    value = choice(codecs, "detonation")
    ours = codecs["der"].encode("DISPDU", value)
    assert bytes.fromhex("c0ff0065") in asn1c and bytes.fromhex("c0ff0065") not in ours
    assert len(asn1c) - len(ours) == 2  # -50.5 and 3000.125 (velocity x, location z)


@pytest.mark.parametrize("kind", TYPES)
def test_uper(codecs, kind):
    asn1c = fixture(kind, "uper")
    value = codecs["uper"].decode("DISPDU", asn1c)
    assert value == choice(codecs, kind)
    ours = codecs["uper"].encode("DISPDU", value)
    assert codecs["uper"].decode("DISPDU", ours) == value
    assert (ours == asn1c) == (kind not in DIVERGENT)


@pytest.mark.parametrize("kind", TYPES)
def test_ber_reads_skinny_indefinite_lengths(codecs, kind):
    assert codecs["ber"].decode("DISPDU", fixture(kind, "skinny")) == choice(codecs, kind)


@pytest.mark.parametrize("kind", TYPES)
def test_ber_and_aligned_per_round_trip(codecs, kind):
    value = choice(codecs, kind)
    for rules in ("ber", "per"):
        assert codecs[rules].decode("DISPDU", codecs[rules].encode("DISPDU", value)) == value
