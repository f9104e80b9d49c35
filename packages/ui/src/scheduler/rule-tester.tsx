import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler } from '../api.ts';
import { Details, ErrorBox, Field, Json, Page, useAction } from '../components.tsx';
import { Link, pathHref, useLocation } from '../router.tsx';
import { AuthMethodSelect } from './binding-rules.tsx';
import { decodeJwtPayload } from './jwt.ts';

/**
 * `/ui/scheduler/binding-rules/test`: which binding rules a login's claims match, why the others do not, and what
 * the token would get. The evaluation is the service's own (`POST acl/binding-rules/evaluate`, the login's code),
 * never a second one in the browser.
 */

interface Term {
  Text: string;
  Matched: boolean;
  Error?: string;
}

interface RuleVerdict {
  ID: string;
  Description: string;
  Selector: string;
  Matched: boolean;
  Combine?: 'and' | 'or';
  Terms: Term[];
  Error?: string;
  BindType: string;
  BindName: string;
  RoleMissing?: boolean;
  BindNameError?: string;
}

interface Evaluation {
  AuthMethodName: string;
  AuthMethodType: string;
  Variables: { value: Record<string, string>; list: Record<string, string[]> };
  Rules: RuleVerdict[];
  Management: boolean;
  Roles: Array<{ ID: string; Name: string }>;
  Policies: string[];
  TokenName?: string;
  LoginError?: string;
}

const Verdict = ({ matched }: { matched: boolean }) => (
  <span class={`badge ${matched ? 'good' : 'bad'}`}>{matched ? 'matched' : 'not matched'}</span>
);

function RuleCard({ rule }: { rule: RuleVerdict }): JSX.Element {
  const title = rule.Description || rule.ID;
  const failing = rule.Terms.filter((term) => !term.Matched);
  return (
    <article class="panel rule-verdict" aria-label={`Rule ${title}`}>
      <h3>
        <Link href={pathHref('/ui/scheduler/binding-rules', rule.ID)}>{title}</Link> <Verdict matched={rule.Matched} />
      </h3>
      <Details
        rows={[
          ['Selector', rule.Selector ? <code key="s">{rule.Selector}</code> : '(empty: matches every login)'],
          ['Binds', rule.BindType === 'management' ? 'a management token' : `${rule.BindType} ${rule.BindName}`],
        ]}
      />
      {rule.Error ? <p class="error">{rule.Error}</p> : null}
      {rule.Terms.length ? (
        <>
          <p class="note">
            {rule.Terms.length === 1
              ? 'The selector is one term:'
              : rule.Combine === 'and'
                ? 'Every term must hold (and):'
                : 'One term must hold (or):'}
          </p>
          <ul class="terms">
            {rule.Terms.map((term, index) => (
              <li key={index} class={term.Matched ? 'term-held' : 'term-failed'}>
                <span class={`badge ${term.Matched ? 'good' : 'bad'}`}>{term.Matched ? 'holds' : 'fails'}</span>{' '}
                <code>{term.Text}</code>
                {term.Error ? <small class="hint"> — {term.Error}</small> : null}
              </li>
            ))}
          </ul>
          {!rule.Matched && failing.length > 0 && rule.Combine !== 'or' ? (
            <p class="why">
              Not matched because <code>{failing[0]?.Text}</code> fails.
            </p>
          ) : null}
          {!rule.Matched && rule.Combine === 'or' ? <p class="why">Not matched because no term holds.</p> : null}
        </>
      ) : null}
      {rule.RoleMissing ? (
        <p class="note">No role is named {rule.BindName}: the login binds nothing for this rule.</p>
      ) : null}
      {rule.BindNameError ? <p class="error">The bind name does not compute: {rule.BindNameError}</p> : null}
    </article>
  );
}

function Outcome({ result }: { result: Evaluation }): JSX.Element {
  const matched = result.Rules.filter((rule) => rule.Matched).length;
  return (
    <section class="panel" aria-label="What the login would get">
      <h2>What the login would get</h2>
      {result.LoginError ? (
        <p class="error" role="status">
          The login would fail: {result.LoginError}
        </p>
      ) : (
        <Details
          rows={[
            ['Token type', result.Management ? 'management' : 'client'],
            [
              'Roles',
              result.Roles.length
                ? result.Roles.map((role, index) => (
                    <span key={role.ID}>
                      {index ? ', ' : ''}
                      <Link href={pathHref('/ui/scheduler/roles', role.ID)}>{role.Name}</Link>
                    </span>
                  ))
                : '—',
            ],
            [
              'Policies',
              result.Policies.length
                ? result.Policies.map((policy, index) => (
                    <span key={policy}>
                      {index ? ', ' : ''}
                      <Link href={pathHref('/ui/scheduler/policies', policy)}>{policy}</Link>
                    </span>
                  ))
                : '—',
            ],
            ['Token name', result.TokenName ?? '—'],
          ]}
        />
      )}
      <p class="note">
        {matched} of {result.Rules.length} rules of {result.AuthMethodName} matched.
      </p>
      <details>
        <summary>Claims as the login maps them</summary>
        <Json value={result.Variables} />
      </details>
    </section>
  );
}

export function RuleTesterPage(): JSX.Element {
  const { query } = useLocation();
  const [method, setMethod] = useState(query.get('method') ?? '');
  const [source, setSource] = useState<'claims' | 'jwt'>('claims');
  const [claims, setClaims] = useState('');
  const [jwt, setJwt] = useState('');
  const [decodeError, setDecodeError] = useState('');
  const [result, setResult] = useState<Evaluation | undefined>(undefined);
  const action = useAction();
  const decode = () => {
    try {
      setClaims(JSON.stringify(decodeJwtPayload(jwt), null, 2));
      setDecodeError('');
      setSource('claims');
    } catch (error) {
      setDecodeError((error as Error).message);
    }
  };
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      setResult(undefined);
      if (!method) throw new Error('Choose an auth method');
      let parsed: unknown;
      try {
        parsed = JSON.parse(claims);
      } catch (error) {
        throw new Error(`The claims are not valid JSON: ${(error as Error).message}`);
      }
      setResult(
        await scheduler<Evaluation>('POST', api`acl/binding-rules/evaluate`, {
          AuthMethodName: method,
          Claims: parsed,
        }),
      );
    });
  };
  return (
    <Page title="Binding-rule tester" actions={<Link href="/ui/scheduler/binding-rules">All binding rules</Link>}>
      <p class="note">
        A dry run: the service maps the claims and evaluates the method's binding rules exactly as a login does, but
        verifies nothing and mints no token.
      </p>
      <form onSubmit={submit} aria-label="Test binding rules">
        <AuthMethodSelect value={method} onChange={setMethod} />
        <div role="tablist" class="tabs" aria-label="Where the claims come from">
          <button type="button" role="tab" aria-selected={source === 'claims'} onClick={() => setSource('claims')}>
            Paste claims
          </button>
          <button type="button" role="tab" aria-selected={source === 'jwt'} onClick={() => setSource('jwt')}>
            Decode a JWT
          </button>
        </div>
        {source === 'claims' ? (
          <Field
            label="Claims (JSON)"
            value={claims}
            onInput={setClaims}
            multiline
            rows={8}
            placeholder={'{\n  "sub": "ada",\n  "groups": ["engineering"]\n}'}
          />
        ) : (
          <div class="field-group">
            <Field label="JWT" value={jwt} onInput={setJwt} multiline rows={4} />
            <p class="note">
              The JWT is decoded here in the browser and is not verified (signature, issuer, audience and expiry are not
              checked): enough for a dry run of the rules; a real login checks all of them.
            </p>
            {decodeError ? (
              <div class="error" role="alert">
                {decodeError}
              </div>
            ) : null}
            <button type="button" class="secondary" onClick={decode}>
              Decode payload
            </button>
          </div>
        )}
        <ErrorBox error={action.error} />
        <div class="actions">
          <button type="submit" disabled={action.busy}>
            Evaluate
          </button>
        </div>
      </form>
      {result ? (
        <div class="tester-result">
          <Outcome result={result} />
          <h2>Rules of {result.AuthMethodName}</h2>
          {result.Rules.length === 0 ? <p class="empty">The method has no binding rules.</p> : null}
          {result.Rules.map((rule) => (
            <RuleCard key={rule.ID} rule={rule} />
          ))}
        </div>
      ) : null}
    </Page>
  );
}
