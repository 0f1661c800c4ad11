// Grammar of .sched schedule scripts (docs/language.md, "Schedules").
//   rs, ag = split(sum);
//   reorder(ag, out);
//   f = fuse(rs, out, ag);
//   overlap(y, f, chunks = 4);
//   f = fuse(rs, g, w_new.*, ag);     // w_new.*: the stages of the statement w_new
grammar Sched;

script  : step* EOF ;
step    : (name (',' name)* '=')? IDENT '(' (arg (',' arg)*)? ')' ';' ;
arg     : IDENT '=' value | name | pattern ;
pattern : name '.' '*' ;                 // every stage named `name` or `name.<anything>`
value   : name | INT ;
name    : IDENT ('.' (IDENT | INT))* ;   // made names can end in a number: fused.1

INT     : [0-9]+ ;
IDENT   : [a-zA-Z_] [a-zA-Z_0-9]* ;
LPAREN : '(' ; RPAREN : ')' ; COMMA : ',' ; SEMI : ';' ; ASSIGN : '=' ; DOT : '.' ; STAR : '*' ;
LINE_COMMENT         : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT        : '/*' .*? '*/' -> skip ;
UNTERMINATED_COMMENT : '/*' ( ~'*' | '*'+ ~[*/] )* '*'* EOF ;
WS                   : [ \t\r\n\f]+ -> skip ;
BAD_CHAR             : . ;
