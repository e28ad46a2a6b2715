/* bridge: between the Go value stream (syntax.Stream) and asn1c's structs.
 * Hand-written; everything else in this directory is generated (gen.sh). */
#ifndef DIS_BRIDGE_H
#define DIS_BRIDGE_H
#include <stddef.h>
#include <stdint.h>

enum dis_rules { DIS_DER = 0, DIS_BER = 1, DIS_UPER = 2 };

/* Results: 0 is success; the others name why (DIS_E* below). */
enum dis_err {
	DIS_OK = 0,
	DIS_EMALFORMED = 1,   /* the decoder failed (RC_FAIL) */
	DIS_ETRUNCATED = 2,   /* the decoder wanted more bytes (RC_WMORE) */
	DIS_ETRAILING = 3,    /* bytes left after the PDU */
	DIS_ECONSTRAINT = 4,  /* a value outside the module's constraints */
	DIS_EUNKNOWNTAG = 5,  /* the outermost tag is no DISPDU alternative */
	DIS_EINDEFINITE = 6,  /* DER: an indefinite length */
	DIS_ENOTDER = 7,      /* DER: decodes, but is not the DER encoding */
	DIS_ESTREAM = 8,      /* the value stream is too short or malformed */
	DIS_EENCODE = 9,      /* the encoder failed (buffer too small, constraint) */
	DIS_ENOMEM = 10
};

/* dis_init must run once before the others (not thread-safe). */
void dis_init(void);

/* dis_encode fills a DISPDU from the stream (v: integers, REAL bits, counts,
 * the CHOICE index; b: octet string contents) and encodes it into out. */
int dis_encode(int rules, const uint64_t *v, size_t nv, const uint8_t *b, size_t nb,
               uint8_t *out, size_t cap, size_t *outlen);

/* dis_decode decodes in and writes the stream; *nv and *nb are the
 * capacities on entry and the lengths used on return. */
int dis_decode(int rules, const uint8_t *in, size_t len,
               uint64_t *v, size_t *nv, uint8_t *b, size_t *nb);

#endif
