"""SPIMS, the measurement specification language of Nordmark & Gunningberg (SICS R88006, 1988).

    spec = parse("100 from khons to udjat bulk_get bytes 1024*1000 < memory > memory;")
    text = format(spec)            # parse(text) == spec
    jobs = expand(spec, "tcp")     # plain data, one job per initiator-responder pair (see `jobs`)

Modules: `grammar` (Appendix B in Lark's notation), `ast` (the typed tree), `parser` (text -> tree ->
`validate`), `validate` (names and values), `printer` (tree -> text), `jobs` (tree -> jobs, sampling).
Every error is a `SpimsSyntaxError` naming line, column, the text found and what was expected.

Where the paper is ambiguous or its OCR garbled, this reading was chosen (line numbers of
/work/shared/seeds/004_da885ebc4b089a94.txt):
- A statement ends with ',' as Appendix B prints it (l. 469) or ';' as the sec. 3 example does (l. 111).
  ',' also separates SIZE,REPLY_SIZE (l. 481) and parameters (l. 497), so a ',' ends a statement only where
  no size pair can follow: before the end of the text or before the next statement's runs and a word. The
  last statement's terminator may be left out, so sec. 7's captions (l. 379, 389, 403) parse as printed;
  the printer writes ';'.
- Keywords are case-insensitive: Appendix B writes terminals in capitals (l. 531), the examples in lower
  case (l. 111). The printer writes lower case, so the sec. 3 example prints back exactly.
- Application types: bulk_get, request_response, connect_disconnect with the short forms rr and conn_disc
  (l. 510) and the hyphenated spellings of sec. 7 (request-response, l. 408, 439). Composers: parallel,
  background, total (l. 506). Distributions (l. 524 names them, not their parameters): constant(value),
  uniform(min, max), normal(mean, stddev), exponential(mean), bivalue(a, b, p_a) (a with probability p_a,
  else b: the bimodal sizes of l. 148). Unknown names fail with the known ones.
- FROM names the initiator's host and TO the responder's: the initiator is "the side from which the
  benchmark is directed" (l. 253). Either may be left out (the runner's choice).
- `priority background:` (l. 411) is a composer with a PRIORITY prefix, allowed before background only.
  In background: the first part is measured and the later parts are background load (l. 162, 318);
  with priority the measured part runs at a higher CPU priority (l. 318). `total` runs its parts at once
  like parallel, reported as one aggregate (the paper gives the name only).
- `<N>` and `N = 0...5` in sec. 7's captions (l. 408-439) are the caption's sweep notation, not grammar:
  the tests substitute values. A part may have 0 replicas (N = 0, l. 409); a data unit size may be 0
  (connect_disconnect 0*1000, l. 403). Runs and counts are at least 1.
- Size spec (l. 480-482): SIZE*COUNT; SIZE,REPLY_SIZE*COUNT is the request size then the reply size, for
  request_response only (its sizes are "the same" by default, l. 249); SIZE [AMOUNT] sends AMOUNT bytes.
  A measurement with neither a count, an amount nor a TIMELIMIT is refused: it would never end (the
  default amount is "a very large number", l. 520).
- The timing list (l. 492-494) has at most two delays: the first before each send at the initiator (the
  "interarrival time", l. 150), the second the responder's before each reply (service time, l. 150).
  Delays and TIMELIMIT are in seconds, the only unit the grammar names (l. 504). Distribution parameters
  are floating point (l. 526) and never negative (they are sizes or delays).
- FILE takes a bare path or a "quoted" one; the grammar has no comments, so neither does this language.
"""

from protolab.spims.ast import (
    Access,
    BasicMeasurement,
    CompositeMeasurement,
    DataSpec,
    Distribution,
    Part,
    Pos,
    SizeSpec,
    Specification,
    Statement,
)
from protolab.spims.errors import SpimsSyntaxError
from protolab.spims.jobs import Dist, Endpoint, Job, expand, sample, sample_size, to_json
from protolab.spims.parser import parse
from protolab.spims.printer import format
from protolab.spims.validate import validate

__all__ = [
    "Access",
    "BasicMeasurement",
    "CompositeMeasurement",
    "DataSpec",
    "Dist",
    "Distribution",
    "Endpoint",
    "Job",
    "Part",
    "Pos",
    "SizeSpec",
    "SpimsSyntaxError",
    "Specification",
    "Statement",
    "expand",
    "format",
    "parse",
    "sample",
    "sample_size",
    "to_json",
    "validate",
]
