// Package syntax holds the transfer syntaxes of the DIS host: how a
// dis.PDU is put on the wire, one registered Codec per name (Loper et al.,
// seed 000, issue 15).
//
//	raw     the native DIS encoding (agents/dis), "without transfer syntax"
//	ber     ASN.1 BER    } asn1c 0.9.28 codecs compiled from asn1/DIS.asn,
//	der     ASN.1 DER    } through cgo (package asn1c, which registers them;
//	uper    unaligned PER} unavailable, saying why, without cgo)
//	per     aligned PER: free5gc/aper (package aper, pure Go) over struct
//	        tags mirroring the module; REAL contents by real.go
//	skinny  the paper's skinny envelope (skinny.go): BER whose invariant
//	        16 octets per exercise and type are pre-encoded and matched
//	        byte-wise; the general BER parse only on a mismatch
//
// New(name, Options) makes a codec; an unknown name fails listing the known
// ones. Decode errors are *DecodeError with one of Reasons, which the DIS
// host counts as drops ("syntax-<reason>"); malformed input never panics
// (fuzzed: asn1c/fuzz_test.go).
//
// Walk visits a PDU's values in the ASN.1 module's component order through
// an Archive; every encoder but raw's is an Archive (Stream feeds asn1c's
// structs, berWriter is skinny's) and Compose counts Table 2's integers,
// reals and octet strings with it. Skinny's decoder of a matched PDU reads
// the same order without it, one function per type (skinny_fast.go). The module and Walk are kept in
// step by the tests: asn1c decodes what Walk writes and asn1tools (a second,
// independent ASN.1 implementation, protolab/tests/unit/test_asn1_crosscheck.py)
// decodes and re-encodes asn1c's bytes (testdata/crosscheck); asn1c decodes
// asn1tools' (testdata/asn1tools).
//
// Sizes in bytes of syntax.Samples() (two articulation parameters or supply
// quantities where the type has records; make bench prints them as
// bytes/pdu; asn1tools' aligned PER is 2 and 1 octets longer for Entity
// State and Fire, a zero octet before REAL mantissas whose top bit is set):
//
//	type               raw  ber/der  uper  skinny  per
//	Entity State       176    278     165    278     160
//	Fire                96    165      92    165      88
//	Detonation         136    223     123    224     120
//	Collision           60     99      56    103      57
//	Service Request     52    114      47    118      48
//	Resupply Offer      52    111      46    115      47
//	Resupply Received   52    111      46    115      47
//	Resupply Cancel     24     49      23     53      24
//	Repair Complete     28     53      25     57      26
//	Repair Response     28     52      24     56      25
//
// The bars (make bench, asn1c's BenchmarkBars: an Entity State PDU
// on a hot loop; go1.26.8 on a 2-core AMD EPYC VM, 2026-11-25, the quietest
// of repeated runs):
//
//	BER encode+decode / raw's          28-30 us / 84-89 ns   330-340x  (no target)
//	skinny decode (matched) / raw's    286-305 ns / 65-69 ns  4.2-4.6x  (bar: 2x)
//
// Skinny's matched decode allocates nothing; it was 7.8-8.2x with 3
// allocations when Walk drove it. It stays over 2x because BER's minimal
// INTEGER and REAL contents put no field at a fixed offset: about 65 tags
// and lengths are still read per Entity State PDU.
package syntax
