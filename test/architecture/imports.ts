import { SyntaxKind } from 'typescript/unstable/ast';
import { createScanner } from 'typescript/unstable/ast/scanner';

/**
 * The module specifiers a file imports: `import … from`, `import type … from`, `import '…'`, `export … from` and
 * `import('…')`, read with TypeScript's own scanner (TypeScript 7's JavaScript API has no `preProcessFile`; this is
 * the token walk it did), so comments, strings, templates and regular expressions are never mistaken for imports.
 */
export function importsOf(text: string): string[] {
  const scanner = createScanner(true, 0, text);
  const found: string[] = [];
  const braces: Array<'brace' | 'template'> = [];
  let previous = SyntaxKind.Unknown;
  // After these a `/` divides; anywhere else it starts a regular expression.
  const endsExpression = new Set([
    SyntaxKind.Identifier,
    SyntaxKind.NumericLiteral,
    SyntaxKind.StringLiteral,
    SyntaxKind.CloseParenToken,
    SyntaxKind.CloseBracketToken,
    SyntaxKind.CloseBraceToken,
    SyntaxKind.ThisKeyword,
    SyntaxKind.TrueKeyword,
    SyntaxKind.FalseKeyword,
    SyntaxKind.NullKeyword,
    SyntaxKind.NoSubstitutionTemplateLiteral,
    SyntaxKind.TemplateTail,
    SyntaxKind.PlusPlusToken,
    SyntaxKind.MinusMinusToken,
  ]);
  const next = (): SyntaxKind => {
    let token = scanner.scan();
    if ((token === SyntaxKind.SlashToken || token === SyntaxKind.SlashEqualsToken) && !endsExpression.has(previous))
      token = scanner.reScanSlashToken();
    if (token === SyntaxKind.TemplateHead) braces.push('template');
    else if (token === SyntaxKind.OpenBraceToken) braces.push('brace');
    else if (token === SyntaxKind.CloseBraceToken && braces.pop() === 'template') {
      token = scanner.reScanTemplateToken(false);
      if (token === SyntaxKind.TemplateMiddle) braces.push('template');
    }
    previous = token;
    return token;
  };
  /** Skips an import or export clause up to `from` and takes the string after it; stops at the statement's end. */
  const fromClause = () => {
    for (let token = next(); token !== SyntaxKind.EndOfFile; token = next()) {
      if (token === SyntaxKind.FromKeyword) {
        if (next() === SyntaxKind.StringLiteral) found.push(scanner.getTokenValue());
        return;
      }
      if (token === SyntaxKind.SemicolonToken || token === SyntaxKind.StringLiteral || token === SyntaxKind.EqualsToken)
        return;
    }
  };
  for (let token = next(); token !== SyntaxKind.EndOfFile; token = next()) {
    if (token === SyntaxKind.ImportKeyword) {
      const after = scanner.lookAhead(() => scanner.scan());
      if (after === SyntaxKind.StringLiteral) {
        next();
        found.push(scanner.getTokenValue());
      } else if (after === SyntaxKind.OpenParenToken) {
        next();
        if (next() === SyntaxKind.StringLiteral) found.push(scanner.getTokenValue());
      } else if (after !== SyntaxKind.DotToken) fromClause();
    } else if (token === SyntaxKind.ExportKeyword) {
      const after = scanner.lookAhead(() => scanner.scan());
      if (
        after === SyntaxKind.OpenBraceToken ||
        after === SyntaxKind.AsteriskToken ||
        after === SyntaxKind.TypeKeyword
      ) {
        // `export { a };` has no `from`: the clause ends at its closing brace.
        const clauseEnd = () => {
          for (let inner = next(); inner !== SyntaxKind.EndOfFile; inner = next()) {
            if (inner === SyntaxKind.CloseBraceToken && !braces.includes('brace')) return true;
            if (inner === SyntaxKind.FromKeyword) return false;
            if (inner === SyntaxKind.SemicolonToken) return true;
          }
          return true;
        };
        if (after === SyntaxKind.OpenBraceToken || after === SyntaxKind.TypeKeyword) {
          if (clauseEnd()) {
            if (scanner.lookAhead(() => scanner.scan()) === SyntaxKind.FromKeyword) {
              next();
              if (next() === SyntaxKind.StringLiteral) found.push(scanner.getTokenValue());
            }
            continue;
          }
          if (next() === SyntaxKind.StringLiteral) found.push(scanner.getTokenValue());
        } else fromClause();
      }
    }
  }
  return found;
}
