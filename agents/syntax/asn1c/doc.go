// Package asn1c registers the ASN.1 transfer syntaxes "ber", "der" and
// "uper" of the DIS module ../asn1/DIS.asn, encoded and decoded by C that
// asn1c 0.9.28 (Debian's asn1c package, the compiler of vlm/asn1c) generated
// from the module, called through cgo. The generated files are committed;
// gen.sh regenerates them and TestGeneratedUpToDate fails when they differ.
// bridge.c (hand-written, about 200 lines) walks asn1c's type descriptors
// to move values between the generated structs and a syntax.Stream, so no
// per-field glue exists on either side.
//
// Why asn1c: it compiles the module into codecs (no interpretation of the
// schema at run time), it is packaged by Debian (apt, pinned by the
// release), and its BER/DER/PER runtime is a long-maintained, widely used
// one. The second, independent implementation is asn1tools (PyPI, pinned
// in requirements.txt): protolab/tests/unit/test_asn1_crosscheck.py decodes
// and re-encodes asn1c's bytes (../testdata/crosscheck), and
// TestDecodesAsn1tools has asn1c decode asn1tools' DER, BER and UPER
// (../testdata/asn1tools, written by that Python file) back to the samples.
//
// Which DER is canonical: the two agree on every sample but some REALs, and
// neither is always right. X.690 11.3.1 makes DER's REAL base 2 with F = 0,
// the mantissa odd, "and M and E shall each be represented in the fewest
// octets necessary" (the mantissa N is an unsigned binary number, 8.5.7.5).
// asn1c 0.9.28's asn_double2REAL (REAL.c) shifts the mantissa right to make
// it odd and keeps a first octet the shift emptied (-50.5 as c0 ff 00 65);
// asn1tools 0.169.0 sizes the mantissa as a two's complement integer, a
// zero octet before a top bit set (100.5 as 80 ff 00 c9; asn1c does the
// same there). The DER of both is c0 ff 65 and 80 ff c9, which skinny's
// writer produces (syntax.DefiniteBER). Both forms are valid BER and every
// decoder here reads both, but the "der" syntax below checks DER by
// re-encoding with asn1c and comparing, so it refuses the canonical form of
// such values as not-der and accepts asn1c's. Fixing that means patching
// REAL.c, which gen.sh copies unchanged from Debian's asn1c.
//
// What the names mean:
//
//	ber   encodes DER (every DER encoding is BER; asn1c has no separate BER
//	      encoder); decodes any BER: indefinite lengths, non-minimal length
//	      octets, REAL in any base accepted (X.690 8.1.3.6).
//	der   encodes DER; decodes only DER: input that decodes but is not the
//	      DER encoding of its value is rejected (reason indefinite-length
//	      when an indefinite length is present, else not-der).
//	uper  unaligned PER (X.691 UNALIGNED variant).
//
// Aligned PER is not here: asn1c 0.9.28 has only the unaligned variant
// (aper_* arrived in asn1c's later development line, not in a Debian
// release). Package ../aper registers "per" with free5gc/aper instead.
//
// Unknown tags: the module has no extension markers, so an outermost tag
// that is no DISPDU alternative is a drop with reason unknown-tag and an
// unknown tag inside a PDU makes asn1c fail (reason malformed). Values out of
// the module's ranges (BER decoders do not check constraints) are reported
// as constraint after asn_check_constraints.
//
// Without cgo (CGO_ENABLED=0) the three names are registered as
// unavailable, saying so.
package asn1c
