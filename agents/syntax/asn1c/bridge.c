/* bridge: walks asn1c's type descriptors to move values between a flat
 * stream and the generated structs, so that no per-field code is needed.
 * The stream's order is the module's component order (syntax.Walk). */
#include <stdlib.h>
#include <string.h>
#include "bridge.h"
#include "DISPDU.h"
#include "per_encoder.h"
#include "per_decoder.h"
#include "UInt8.h"
#include "UInt16.h"
#include "UInt32.h"

typedef struct {
	uint64_t *v; size_t nv, iv;
	uint8_t *b; size_t nb, ib;
} stream;

enum kind { K_INT, K_UINT, K_BIGINT, K_REAL, K_OCTETS, K_SEQ, K_SEQOF, K_CHOICE, K_OTHER };

static enum kind kind_of(const asn_TYPE_descriptor_t *td) {
	if (td->der_encoder == NativeInteger_encode_der) {
		const asn_INTEGER_specifics_t *s = td->specifics;
		return (s && s->field_unsigned) ? K_UINT : K_INT;
	}
	if (td->der_encoder == INTEGER_encode_der) return K_BIGINT;
	if (td->der_encoder == NativeReal_encode_der) return K_REAL;
	if (td->der_encoder == OCTET_STRING_encode_der) return K_OCTETS;
	if (td->der_encoder == SEQUENCE_encode_der) return K_SEQ;
	if (td->der_encoder == SEQUENCE_OF_encode_der) return K_SEQOF;
	if (td->der_encoder == CHOICE_encode_der) return K_CHOICE;
	return K_OTHER;
}

static int next(stream *s, uint64_t *x) {
	if (s->iv >= s->nv) return -1;
	*x = s->v[s->iv++];
	return 0;
}

static int put(stream *s, uint64_t x) {
	if (s->iv >= s->nv) return -1;
	s->v[s->iv++] = x;
	return 0;
}

static int fill(asn_TYPE_descriptor_t *td, void *p, stream *s) {
	uint64_t x;
	int i;
	switch (kind_of(td)) {
	case K_INT: case K_UINT:
		if (next(s, &x)) return -1;
		*(long *)p = (long)x;
		return 0;
	case K_REAL: {
		double d;
		if (next(s, &x)) return -1;
		memcpy(&d, &x, sizeof d);
		*(double *)p = d;
		return 0;
	}
	case K_OCTETS:
		if (next(s, &x) || x > s->nb - s->ib) return -1;
		if (OCTET_STRING_fromBuf((OCTET_STRING_t *)p, (const char *)s->b + s->ib, (int)x)) return -1;
		s->ib += x;
		return 0;
	case K_SEQ:
		for (i = 0; i < td->elements_count; i++) {
			asn_TYPE_member_t *m = &td->elements[i];
			if (m->flags & ATF_POINTER) return -1; /* no OPTIONAL in the module */
			if (fill(m->type, (char *)p + m->memb_offset, s)) return -1;
		}
		return 0;
	case K_SEQOF: {
		asn_TYPE_descriptor_t *et = td->elements[0].type;
		const asn_SEQUENCE_specifics_t *es = et->specifics;
		if (next(s, &x) || x > 255) return -1;
		for (uint64_t k = 0; k < x; k++) {
			void *e = calloc(1, es->struct_size);
			if (!e) return -1;
			if (asn_sequence_add(p, e)) { free(e); return -1; }
			if (fill(et, e, s)) return -1;
		}
		return 0;
	}
	case K_CHOICE: {
		const asn_CHOICE_specifics_t *cs = td->specifics;
		int pres;
		if (next(s, &x) || x < 1 || x > (uint64_t)td->elements_count) return -1;
		pres = (int)x;
		if (cs->pres_size != sizeof(int)) return -1;
		memcpy((char *)p + cs->pres_offset, &pres, sizeof pres);
		return fill(td->elements[pres - 1].type, (char *)p + td->elements[pres - 1].memb_offset, s);
	}
	default:
		return -1;
	}
}

static int emit(asn_TYPE_descriptor_t *td, const void *p, stream *s) {
	int i;
	switch (kind_of(td)) {
	case K_INT: case K_UINT:
		return put(s, (uint64_t) * (const long *)p);
	case K_REAL: {
		uint64_t x;
		memcpy(&x, p, sizeof x);
		return put(s, x);
	}
	case K_OCTETS: {
		const OCTET_STRING_t *o = p;
		if (o->size < 0 || (size_t)o->size > s->nb - s->ib || put(s, (uint64_t)o->size)) return -1;
		if (o->size) memcpy(s->b + s->ib, o->buf, o->size);
		s->ib += o->size;
		return 0;
	}
	case K_SEQ:
		for (i = 0; i < td->elements_count; i++) {
			asn_TYPE_member_t *m = &td->elements[i];
			if (m->flags & ATF_POINTER) return -1;
			if (emit(m->type, (const char *)p + m->memb_offset, s)) return -1;
		}
		return 0;
	case K_SEQOF: {
		const asn_anonymous_sequence_ *l = p;
		if (put(s, (uint64_t)l->count)) return -1;
		for (i = 0; i < l->count; i++)
			if (emit(td->elements[0].type, l->array[i], s)) return -1;
		return 0;
	}
	case K_CHOICE: {
		const asn_CHOICE_specifics_t *cs = td->specifics;
		int pres;
		memcpy(&pres, (const char *)p + cs->pres_offset, sizeof pres);
		if (pres < 1 || pres > td->elements_count || put(s, (uint64_t)pres)) return -1;
		return emit(td->elements[pres - 1].type, (const char *)p + td->elements[pres - 1].memb_offset, s);
	}
	default:
		return -1;
	}
}

/* asn1c 0.9.28's types derived from INTEGER copy NativeInteger's functions
 * into their descriptor on first use, check_constraints included, after which
 * range checks silently pass. Trigger that copy now and put the range checks
 * back, so that kind_of sees NativeInteger and asn_check_constraints checks. */
static void derive(asn_TYPE_descriptor_t *td, asn_constr_check_f *check) {
	td->free_struct(td, NULL, 0);
	td->check_constraints = check;
}

void dis_init(void) {
	derive(&asn_DEF_UInt8, UInt8_constraint);
	derive(&asn_DEF_UInt16, UInt16_constraint);
	derive(&asn_DEF_UInt32, UInt32_constraint);
}

int dis_encode(int rules, const uint64_t *v, size_t nv, const uint8_t *b, size_t nb,
               uint8_t *out, size_t cap, size_t *outlen) {
	stream s = { (uint64_t *)v, nv, 0, (uint8_t *)b, nb, 0 };
	DISPDU_t *pdu = calloc(1, sizeof *pdu);
	asn_enc_rval_t er;
	int rc = DIS_OK;
	if (!pdu) return DIS_ENOMEM;
	if (fill(&asn_DEF_DISPDU, pdu, &s) || s.iv != nv || s.ib != nb) {
		rc = DIS_ESTREAM;
		goto done;
	}
	if (rules == DIS_UPER) er = uper_encode_to_buffer(&asn_DEF_DISPDU, pdu, out, cap);
	else er = der_encode_to_buffer(&asn_DEF_DISPDU, pdu, out, cap);
	if (er.encoded < 0) {
		rc = DIS_EENCODE;
		goto done;
	}
	*outlen = rules == DIS_UPER ? (size_t)(er.encoded + 7) / 8 : (size_t)er.encoded;
done:
	ASN_STRUCT_FREE(asn_DEF_DISPDU, pdu);
	return rc;
}

/* indefinite reports whether any TLV in b uses the indefinite length form. */
static int indefinite(const uint8_t *b, size_t n, int depth) {
	while (n > 0) {
		ber_tlv_tag_t tag;
		ber_tlv_len_t len;
		ssize_t tl = ber_fetch_tag(b, n, &tag), ll;
		int cons;
		if (tl <= 0 || (size_t)tl >= n) return 0;
		cons = BER_TLV_CONSTRUCTED(b);
		ll = ber_fetch_length(cons, b + tl, n - tl, &len);
		if (ll <= 0) return 0;
		if (len < 0) return 1;
		if ((size_t)len > n - tl - ll) return 0;
		if (cons && depth < 16 && indefinite(b + tl + ll, len, depth + 1)) return 1;
		b += tl + ll + len;
		n -= tl + ll + len;
	}
	return 0;
}

int dis_decode(int rules, const uint8_t *in, size_t len,
               uint64_t *v, size_t *nv, uint8_t *b, size_t *nb) {
	DISPDU_t *pdu = NULL;
	asn_dec_rval_t dr;
	stream s = { v, *nv, 0, b, *nb, 0 };
	int rc = DIS_OK;
	if (rules != DIS_UPER) {
		ber_tlv_tag_t tag;
		ssize_t tl = ber_fetch_tag(in, len, &tag);
		if (tl > 0 && (BER_TAG_CLASS(tag) != ASN_TAG_CLASS_CONTEXT ||
		               BER_TAG_VALUE(tag) < 1 || BER_TAG_VALUE(tag) > 10))
			return DIS_EUNKNOWNTAG;
		dr = ber_decode(0, &asn_DEF_DISPDU, (void **)&pdu, in, len);
	} else {
		dr = uper_decode_complete(0, &asn_DEF_DISPDU, (void **)&pdu, in, len);
	}
	if (dr.code == RC_WMORE) { rc = DIS_ETRUNCATED; goto done; }
	if (dr.code != RC_OK) { rc = DIS_EMALFORMED; goto done; }
	if (dr.consumed != len) { rc = DIS_ETRAILING; goto done; }
	if (asn_check_constraints(&asn_DEF_DISPDU, pdu, NULL, NULL)) { rc = DIS_ECONSTRAINT; goto done; }
	if (rules == DIS_DER) {
		uint8_t *re = malloc(len);
		asn_enc_rval_t er;
		if (!re) { rc = DIS_ENOMEM; goto done; }
		er = der_encode_to_buffer(&asn_DEF_DISPDU, pdu, re, len);
		if (er.encoded != (ssize_t)len || memcmp(re, in, len))
			rc = indefinite(in, len, 0) ? DIS_EINDEFINITE : DIS_ENOTDER;
		free(re);
		if (rc) goto done;
	}
	if (emit(&asn_DEF_DISPDU, pdu, &s)) { rc = DIS_ESTREAM; goto done; }
	*nv = s.iv;
	*nb = s.ib;
done:
	ASN_STRUCT_FREE(asn_DEF_DISPDU, pdu);
	return rc;
}
