"""The SPIMS grammar (Appendix B of Nordmark & Gunningberg 1988) in Lark's notation, LALR(1).

Kept as a string in a module so that it ships with the package. Terminal names are used by
`parser._describe` to say in words what was expected; rename them there too.
"""

GRAMMAR = r"""
// <specification list>: each <specification> ends with "," as Appendix B writes it, or ";" as the sec. 3
// example does; the terminator is optional after the last one. A "," ends a specification only where no size
// pair can follow: before the end of the text, or before the next specification's <num runs> and a word.
start: specification (END specification)* [END]
END.2: /;|,(?=\s*(\Z|[0-9]+\s*[a-z]))/i

// <specification> ::= <num runs> [<timelimit>] <measurement>
specification: INT [timelimit] measurement
timelimit: TIMELIMIT NUMBER
?measurement: basic | composite

// <composite measurement> ::= <composer name> ":" <part list>; "priority background" of sec. 7.4
composite: [PRIORITY] NAME ":" part ("|" part)*
part: [INT] basic

// <basic measurement> ::= <host spec> <application type name> <data spec> <timing list>
basic: [from_host] [to_host] NAME data_spec distribution*
from_host: FROM HOST
to_host: TO HOST

// <data spec> ::= [<data type>] <size spec> <source> <destination>
data_spec: [BYTES] size_spec [source] [destination]
size_spec: unit_size "*" INT                    -> size_count
         | unit_size "," unit_size "*" INT      -> size_pair
         | unit_size [INT]                      -> size_amount
?unit_size: INT | distribution
source: "<" access
destination: ">" access
access: MEMORY                                  -> memory
      | VIRTUAL MEMORY                          -> virtual_memory
      | FILE FILENAME                           -> file

// <distribution> ::= <distribution name> "(" <parameter list> ")"
distribution: NAME "(" NUMBER ("," NUMBER)* ")"

FROM: "from"i
TO: "to"i
TIMELIMIT: "timelimit"i
PRIORITY: "priority"i
BYTES: "bytes"i
MEMORY: "memory"i
VIRTUAL: "virtual"i
FILE: "file"i

NAME: /[a-z_][a-z0-9_\-]*/i
HOST: /[a-z0-9_][a-z0-9_.\-]*/i
FILENAME: /"[^"\n]*"/ | /[^\s;|<>"()]+/
INT: /-?[0-9]+/
NUMBER: /[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?/

%import common.WS
%ignore WS
"""
