/**
 * The item MAC's canonical form (`packages/core/src/storage/item-mac.ts`) is part of the stored format: the tables of a
 * running deployment hold items signed by earlier releases, and a change of form would turn every token, policy and
 * mount into "failed its integrity check". The tags below were computed by the release of 2026-11-26 (before the form's
 * code was rewritten for speed) with a fixed data key; every later release must compute the same.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { ItemMac, itemKind } from '../../packages/core/src/storage/item-mac.ts';
import { Keyring } from '../../packages/core/src/storage/keyring.ts';

const keyring = Keyring.fromDataKey(new Uint8Array(32).map((_, index) => index * 7 + 1));
const mac = new ItemMac(keyring, silentLogger);
const kind = itemKind('token', ['numUses', 'expiresAt']);

const token = {
  pk: 'token#abc',
  sk: 'token',
  policies: ['default', 'bench-read'],
  ttl: 3600,
  numUses: 3,
  expiresAt: 1700000000,
  meta: { b: 'x', a: 'y', z: undefined },
  orphan: false,
  parent: null,
};
const everyKind = {
  pk: 'mount#ü',
  sk: 'päth/日本',
  value: 'v1:séaled',
  data: new Uint8Array([0, 1, 254, 255]),
  tags: new Set(['b', 'a', 'é']),
  nested: [[1, 2.5, -0], { 'k"ey': '\u2028', '': 'empty' }],
  big: 1e21,
};
const oddNames = { pk: 'p', sk: 's', Zed: 1, aardvark: 2, Ä: 3, '\ud83d\ude00': 'emoji', undef: undefined };

describe('item MACs', () => {
  it('compute the tags earlier releases stored, for every kind of value', () => {
    expect(mac.tag(kind, token)).toBe('v1:M-D0WSV6wsT07zUiqXfsmr5zlyCpKfsAEwIw00DwGJs');
    expect(mac.tag(kind, everyKind)).toBe('v1:NaPhe-l9ivRBFE3cwGWTCbv0Acig8YZU6Msgks85wm8');
    expect(mac.tag(kind, oddNames)).toBe('v1:bn3zEuanZiAsVR6iJ9DRpyGSByZdUOCrmOC8R0codlU');
  });

  it('cover every attribute but the kind’s bookkeeping, whatever the order attributes and set members come in', () => {
    const signed = mac.sign(kind, token);
    expect(mac.valid(kind, signed)).toBe(true);
    expect(mac.valid(kind, { ...signed, numUses: 0, expiresAt: 1 })).toBe(true);
    const reordered = Object.fromEntries(Object.entries(signed).reverse()) as typeof signed;
    expect(mac.valid(kind, reordered)).toBe(true);
    const sets = mac.sign(kind, everyKind);
    expect(mac.valid(kind, { ...sets, tags: new Set(['é', 'a', 'b']) })).toBe(true);

    expect(mac.valid(kind, { ...signed, policies: ['default', 'root'] })).toBe(false);
    expect(mac.valid(kind, { ...signed, meta: { b: 'x', a: 'y', z: 'added' } })).toBe(false);
    expect(mac.valid(kind, { ...signed, builtin: true })).toBe(false);
    expect(mac.valid(kind, { ...signed, sk: 'other' })).toBe(false);
    expect(mac.valid(itemKind('policy', ['numUses', 'expiresAt']), signed)).toBe(false);
    // Bytes and the text of their base64, a set and a list of its members: different values, different tags.
    expect(mac.valid(kind, { ...sets, data: Buffer.from([0, 1, 254, 255]).toString('base64') })).toBe(false);
    expect(mac.valid(kind, { ...sets, tags: ['a', 'b', 'é'] })).toBe(false);
  });
});
