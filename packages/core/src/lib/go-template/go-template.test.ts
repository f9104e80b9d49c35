import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkTemplate, formatGoTime, renderTemplate, sprintf, TemplateError, utf16le } from './index.ts';

const at = Date.UTC(2026, 0, 2, 15, 4, 5, 123);
const render = (source: string, data: unknown = {}) =>
  renderTemplate(source, data, { now: () => at, functions: { utf16le } });
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

function failure(source: string, data: unknown = {}): string {
  try {
    render(source, data);
  } catch (error) {
    if (error instanceof TemplateError) return error.message;
    throw error;
  }
  throw new Error(`expected ${source} to fail`);
}

describe('go-template', () => {
  it('renders fields, pipelines and the default username template', () => {
    const data = { DisplayName: 'token-ci', RoleName: 'dev_role' };
    expect(render('{{.DisplayName}}/{{ .RoleName }}', data)).toBe('token-ci/dev_role');
    expect(render('v_{{.DisplayName}}_{{.RoleName}}_{{random 10}}_{{unix_time}}', data)).toMatch(
      /^v_token-ci_dev_role_[A-Za-z0-9]{10}_1767366245$/,
    );
    expect(render('{{ .RoleName | replace "_" "-" | uppercase }}', data)).toBe('DEV-ROLE');
    expect(render('{{ printf "%s-%s" .DisplayName (.RoleName | truncate 3) | lowercase }}', data)).toBe('token-ci-dev');
    expect(render('{{.}}', 'dot')).toBe('dot');
    expect(render('{{ .A.B }}', { A: { B: 7 } })).toBe('7');
  });

  it("implements Vault's helpers exactly", () => {
    const long = 'abcdefghijklmnopqrstuvwxyz';
    expect(render('{{ .X | truncate 5 }}', { X: long })).toBe('abcde');
    expect(render('{{ .X | truncate 50 }}', { X: long })).toBe(long);
    // truncate_sha256 keeps N-8 characters and appends the hash of the cut-off tail.
    expect(render('{{ .X | truncate_sha256 12 }}', { X: long })).toBe(
      `abcd${sha('efghijklmnopqrstuvwxyz').slice(0, 8)}`,
    );
    expect(render('{{ .X | truncate_sha256 30 }}', { X: long })).toBe(long);
    expect(render('{{ .X | sha256 }}', { X: 'pw' })).toBe(sha('pw'));
    expect(render('{{ .X | base64 }}', { X: 'héllo' })).toBe(Buffer.from('héllo').toString('base64'));
    expect(render('{{ unix_time }} {{ unix_time_millis }}')).toBe('1767366245 1767366245123');
    expect(render('{{ timestamp "2006-01-02T15:04:05Z07:00" }}')).toBe('2026-01-02T15:04:05Z');
    expect(render('{{ timestamp "Mon Jan _2 3:04PM .000" }}')).toBe('Fri Jan  2 3:04PM .123');
    expect(render('{{ uuid }}')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(render('{{ random 20 }}')).toMatch(/^[A-Za-z0-9]{20}$/);
    // AD's unicodePwd: the quoted password, UTF-16LE, base64 (as in Vault's documentation).
    expect(render('{{ printf "%q" .Password | utf16le | base64 }}', { Password: 'pw' })).toBe(
      Buffer.from('"pw"', 'utf16le').toString('base64'),
    );
    expect(failure('{{ .X | truncate 0 }}', { X: 'a' })).toContain('max length must be > 0');
    expect(failure('{{ .X | truncate_sha256 8 }}', { X: 'a' })).toContain('max length must be > 8');
  });

  it('supports conditionals, comments, trim markers and Go builtins', () => {
    const source = '{{- if eq .N 1 -}} one {{- else if gt .N 5 -}} many {{- else -}} few {{- end -}}';
    expect(render(source, { N: 1 })).toBe('one');
    expect(render(source, { N: 9 })).toBe('many');
    expect(render(source, { N: 3 })).toBe('few');
    expect(render('a {{/* note */}} b')).toBe('a  b');
    expect(render('{{with .U}}[{{.}}]{{else}}none{{end}}', { U: '' })).toBe('none');
    expect(render('{{range .L}}<{{.}}>{{end}}', { L: ['x', 'y'] })).toBe('<x><y>');
    expect(
      render('{{ len .S }} {{ index .L 1 }} {{ not true }} {{ and 1 0 }} {{ or 0 "z" }}', { S: 'abc', L: ['p', 'q'] }),
    ).toBe('3 q false 0 z');
    expect(render('{{ print "a" 1 2 "b" }}')).toBe('a1 2b');
    expect(render('{{ "x\\ty" }}{{ `raw\\n` }}')).toBe('x\tyraw\\n');
  });

  it('formats like Go fmt', () => {
    expect(sprintf('%s=%d %q %5s|%-4s| %x %t %.2f %%', ['a', 42, 'q"', 'r', 'l', 'hi', true, 1.5])).toBe(
      'a=42 "q\\""     r|l   | 6869 true 1.50 %',
    );
    expect(sprintf('%s', [])).toBe('%!s(MISSING)');
  });

  it('reports template errors', () => {
    expect(failure('{{ .Missing }}', { Present: 1 })).toContain('Missing');
    expect(failure('{{ nosuch 1 }}')).toContain('function "nosuch" not defined');
    expect(failure('{{ if .A }}x')).toContain('missing {{end}}');
    expect(failure('{{ end }}')).toContain('unexpected {{end}}');
    expect(failure('{{ .A ')).toContain('unclosed action');
    expect(failure('{{ "abc }}')).toContain('unterminated');
    expect(() => checkTemplate('{{ utf16le .X }}')).toThrow(TemplateError);
    expect(() => checkTemplate('{{ utf16le .X }}', ['utf16le'])).not.toThrow();
  });

  it('formats Go layouts', () => {
    const date = new Date(Date.UTC(2026, 10, 22, 0, 7, 9));
    expect(formatGoTime(date, '20060102150405')).toBe('20261122000709');
    expect(formatGoTime(date, 'January 2, 2006 03:04:05 PM MST')).toBe('November 22, 2026 12:07:09 AM UTC');
  });
});
