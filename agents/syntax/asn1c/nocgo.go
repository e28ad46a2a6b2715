//go:build !cgo

package asn1c

import "protolab/agents/syntax"

func init() {
	const why = "built with CGO_ENABLED=0; the asn1c codecs need cgo"
	syntax.RegisterUnavailable("ber", "ASN.1 BER (asn1c)", why)
	syntax.RegisterUnavailable("der", "ASN.1 DER (asn1c)", why)
	syntax.RegisterUnavailable("uper", "ASN.1 unaligned PER (asn1c)", why)
}
