/**
 * The go-bexpr boolean expression language as a peggy grammar. Kept as a string in a module (not a `.peggy`
 * file) so a Lambda bundle carries it without a loader; `bexpr.ts` generates the parser from it on first use.
 */
export const bexprGrammar = String.raw`
Input
  = _ expr:Or _ { return expr; }

Or
  = head:And tail:(__ "or" __ @And)* { return tail.reduce((left, right) => ({ type: 'or', left, right }), head); }

And
  = head:Not tail:(__ "and" __ @Not)* { return tail.reduce((left, right) => ({ type: 'and', left, right }), head); }

Not
  = "not" __ expr:Not { return { type: 'not', expr }; }
  / Primary

Primary
  = "(" _ expr:Or _ ")" { return expr; }
  / Match

Match
  = selector:Selector operator:ValueOperator value:Value { return { type: 'match', selector, operator, value }; }
  / selector:Selector operator:EmptyOperator { return { type: 'match', selector, operator }; }
  / value:Value operator:InOperator selector:Selector { return { type: 'match', selector, operator, value }; }

ValueOperator
  = _ "==" _ { return 'equal'; }
  / _ "!=" _ { return 'not equal'; }
  / __ "not" __ "contains" __ { return 'not contains'; }
  / __ "contains" __ { return 'contains'; }
  / __ "not" __ "matches" __ { return 'not matches'; }
  / __ "matches" __ { return 'matches'; }

EmptyOperator
  = __ "is" __ "not" __ "empty" !IdentChar { return 'is not empty'; }
  / __ "is" __ "empty" !IdentChar { return 'is empty'; }

InOperator
  = __ "not" __ "in" __ { return 'not in'; }
  / __ "in" __ { return 'in'; }

Selector
  = head:Identifier tail:SelectorPart* { return [head, ...tail]; }
  / '"' parts:("/" @$[^/"\\]+)+ '"' { return parts; }

SelectorPart
  = "." @Identifier
  / "." @QuotedString
  / "." @$[0-9]+
  / "[" _ @StringLiteral _ "]"

Identifier
  = $([a-zA-Z_] IdentChar*)

IdentChar
  = [a-zA-Z0-9_]

Value
  = StringLiteral
  / $("-"? [0-9]+ ("." [0-9]+)?) &(__ / ")" / !.)
  / $([a-zA-Z0-9_] [a-zA-Z0-9_./-]*)

StringLiteral
  = QuotedString
  / "${'`'}" chars:$[^${'`'}]* "${'`'}" { return chars; }

QuotedString
  = '"' chars:DoubleChar* '"' { return chars.join(''); }

DoubleChar
  = [^"\\]
  / "\\" @EscapedChar

EscapedChar
  = '"' / "\\" / "/" / "n" { return '\n'; } / "t" { return '\t'; } / "r" { return '\r'; }

_
  = [ \t\r\n]*

__
  = [ \t\r\n]+
`;
