//go:build !cgo

package asn1c

import "protolab/agents/syntax"

func init() {
	const why = "built with CGO_ENABLED=0; the asn1c codecs need cgo"
	syntax.RegisterUnavailable("ber", "ASN.1 BER (asn1c)", why)
	syntax.RegisterUnavailable("der", "ASN.1 DER (asn1c)", why)
	syntax.RegisterUnavailable("uper", "ASN.1 unaligned PER (asn1c)", why)
	syntax.RegisterUnavailable("per", "ASN.1 aligned PER", "asn1c 0.9.28 has only unaligned PER (use uper)")
}
