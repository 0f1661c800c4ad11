// Grammar of .cnet programs (docs/language.md is the reference).
//
// The parser does syntax only: names, types, shapes and layouts are checked by sema on the AST.
// Binary operators use one flat rule per precedence level (a loop, not left recursion), so a
// 100,000-term sum gives a shallow parse tree; nesting depth is bounded before parsing
// (src/frontend/Parser.cpp).
grammar Cnet;

file_       : importDecl* topDecl* EOF ;
importDecl  : 'import' IDENT ';' ;
topDecl     : programDecl | defDecl ;

programDecl : 'program' IDENT '(' (param (',' param)* ','?)? ')' block ;
param       : IDENT ':' (SIZE | dtype) ('=' expr)? ;
defDecl     : 'def' IDENT '(' (IDENT (',' IDENT)* ','?)? ')' block ;

block       : '{' stmt* '}' ;

stmt
  : role=(IN | STATE) IDENT ':' tensorType layout? ('@' IDENT)? ';'   # declStmt
  | GROUP IDENT '=' IDENT '(' IDENT ',' expr ')' ';'                  # groupStmt
  | REQUIRE expr ';'                                                   # requireStmt
  | UPDATE IDENT '=' expr ';'                                          # updateStmt
  | IDENT (',' IDENT)* '=' expr ';'                                    # letStmt
  | RETURN (expr (',' expr)*)? ';'                                     # returnStmt
  ;

tensorType  : dtype ('[' (expr (',' expr)*)? ']')? ;
layout      : REPLICATED | LOCAL | SLICED '(' expr ')' ;
dtype       : F16 | BF16 | F32 | F64 | I8 | I32 | I64 | U8 | BOOL ;

expr        : orExpr ;
orExpr      : andExpr (OROR andExpr)* ;
andExpr     : cmpExpr (ANDAND cmpExpr)* ;
cmpExpr     : addExpr (op=(LT | LE | GT | GE | EQ | NE) addExpr)* ;
addExpr     : mulExpr (op+=(PLUS | MINUS) mulExpr)* ;
mulExpr     : unaryExpr (op+=(STAR | SLASH | PERCENT) unaryExpr)* ;
unaryExpr   : op=(MINUS | BANG) unaryExpr | primary ;

primary
  : INT                                                 # intLit
  | FLOAT                                               # floatLit
  | (TRUE | FALSE)                                      # boolLit
  | (IDENT ('.' IDENT)? | dtype) '(' (arg (',' arg)*)? ')'  # call
  | IDENT ('.' member)?                                 # nameRef
  | '(' expr ')'                                        # paren
  ;

// A member of a process group: stage.size, world.rank, stage.next ('size' is also a keyword).
member      : IDENT | SIZE ;

// A call argument: an expression, `name = expression`, or a reduction operator (`allreduce(+, y)`).
arg         : (IDENT '=')? expr | opTok=(PLUS | STAR) ;

IMPORT     : 'import' ;
PROGRAM    : 'program' ;
DEF        : 'def' ;
IN         : 'in' ;
STATE      : 'state' ;
GROUP      : 'group' ;
REQUIRE    : 'require' ;
UPDATE     : 'update' ;
RETURN     : 'return' ;
SIZE       : 'size' ;
REPLICATED : 'replicated' ;
LOCAL      : 'local' ;
SLICED     : 'sliced' ;
TRUE       : 'true' ;
FALSE      : 'false' ;
F16 : 'f16' ; BF16 : 'bf16' ; F32 : 'f32' ; F64 : 'f64' ;
I8 : 'i8' ; I32 : 'i32' ; I64 : 'i64' ; U8 : 'u8' ; BOOL : 'bool' ;

OROR : '||' ; ANDAND : '&&' ;
LE : '<=' ; GE : '>=' ; EQ : '==' ; NE : '!=' ; LT : '<' ; GT : '>' ;
PLUS : '+' ; MINUS : '-' ; STAR : '*' ; SLASH : '/' ; PERCENT : '%' ; BANG : '!' ;
LPAREN : '(' ; RPAREN : ')' ; LBRACK : '[' ; RBRACK : ']' ; LBRACE : '{' ; RBRACE : '}' ;
COMMA : ',' ; SEMI : ';' ; COLON : ':' ; DOT : '.' ; ASSIGN : '=' ; AT : '@' ;

FLOAT : DIGITS '.' DIGITS? EXPONENT? | '.' DIGITS EXPONENT? | DIGITS EXPONENT ;
INT   : DIGITS ;
IDENT : [a-zA-Z_] [a-zA-Z_0-9]* ;
fragment DIGITS   : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? DIGITS ;

LINE_COMMENT         : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT        : '/*' .*? '*/' -> skip ;
// A comment that never closes: it cannot contain "*/" and must run to the end of the file, so
// it never out-matches BLOCK_COMMENT.
UNTERMINATED_COMMENT : '/*' ( ~'*' | '*'+ ~[*/] )* '*'* EOF ;
WS                   : [ \t\r\n\f]+ -> skip ;
// Any other character: the front end reports it as "unexpected character".
BAD_CHAR             : . ;
