// Package aper registers the ASN.1 transfer syntax "per": aligned PER
// (X.691, BASIC-PER ALIGNED variant) of the DIS module ../asn1/DIS.asn,
// encoded and decoded by github.com/free5gc/aper, the aligned-PER codec of
// the free5GC core (its NGAP and NAS messages), pure Go.
//
// Why not asn1c: Debian's asn1c 0.9.28 has only the unaligned variant (its
// aper_* codecs came in the later development line, never released in
// Debian), and asn1tools, the second implementation the other syntaxes are
// checked against, is Python. free5gc/aper reads the module's constraints
// from struct tags (types.go mirrors DIS.asn type for type, in its
// component order), walks the struct by reflection and writes X.691's
// constrained whole numbers, length determinants and octet alignment.
//
// What it lacks is REAL, which X.691 15 encodes as a length determinant and
// the contents octets of the value's CER encoding (X.690 8.5): those fields
// are aper.OctetString tagged `aper:"real"` (a part free5gc/aper ignores,
// so it writes an unconstrained OCTET STRING: the same octets), filled by
// syntax.AppendRealContents (DER's = CER's form) and read by
// syntax.ParseReal (any X.690 REAL).
//
// Values travel between a dis.PDU and the structs through syntax.Stream,
// the flat value sequence the asn1c codecs use: syntax.Walk fills it in the
// module's order, and a plan built once from types.go's struct tags moves it
// into the structs (and back), so no per-field glue exists.
//
// Decoding: any error free5gc/aper returns is a drop with reason truncated
// (it ran out of octets), unknown-tag (a CHOICE index beyond the ten
// alternatives) or malformed; a panic inside it is recovered as malformed;
// octets after the PDU are trailing-bytes (the decoded value is re-encoded
// to learn how many octets it took: PER is canonical for this module but
// for REAL, whose contents are kept as they came). The header's type and
// length fields are checked as for every syntax (syntax.DecodeStream).
//
// Checked against asn1tools' aligned PER: protolab/tests/unit/
// test_asn1_crosscheck.py decodes these encodings (testdata/crosscheck,
// written by this package's tests) to the samples' values, and
// TestDecodesAsn1tools decodes asn1tools' (testdata/asn1tools/*.per).
package aper
