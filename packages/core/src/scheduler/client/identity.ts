/**
 * The JWTs of Nomad 1.11's node introduction: introduction tokens (`nomad node intro create`), which let one new node
 * register in a pool, and node identities, which a registered node then authenticates with. Both are signed HS256
 * with the keyring's identity key (`storage/keyring.ts`): only this service verifies them, so there is no public key
 * to publish, and a token signed by anything else (another service's keyring, `alg: none`, another algorithm) is not
 * one of ours. Claims as Nomad's (`nomad/structs/node.go`, `identity.go`).
 */
import { errors, jwtVerify, SignJWT } from 'jose';
import type { Clock } from '../../lib/clock.ts';
import { uuid } from '../../lib/random.ts';
import type { Keyring } from '../../storage/keyring.ts';

/** Nomad's `IdentityDefaultAud`. */
export const identityAudience = 'nomadproject.io';
/** This service's one region. */
export const region = 'global';
/** Nomad's `NodeIntroductionConfig` defaults: an introduction token lives 5 minutes, at most 30. */
export const introductionTtl = { defaultMs: 5 * 60_000, maxMs: 30 * 60_000 };
/** Nomad's `DefaultNodePoolNodeIdentityTTL`. */
export const defaultNodeIdentityTtlMs = 24 * 3600_000;
/** A node identity is renewed at a heartbeat once this share of its lifetime has passed. */
export const identityRenewalShare = 0.67;

export interface IntroductionClaims {
  kind: 'introduction';
  pool: string;
  name: string;
}

export interface NodeIdentityClaims {
  kind: 'node';
  nodeId: string;
  pool: string;
  datacenter: string;
  issuedAtMs: number;
  expiresAtMs: number;
}

export type VerifiedIdentity = IntroductionClaims | NodeIdentityClaims;

const looksLikeJwt = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** Whether a credential is a JWT (else it is taken for a node's SecretID). */
export const isJwt = (credential: string): boolean => looksLikeJwt.test(credential);

export class NodeIdentities {
  constructor(
    private readonly keyring: Keyring,
    private readonly clock: Clock,
  ) {}

  private async sign(claims: Record<string, unknown>, subject: string, ttlMs: number): Promise<string> {
    const now = Math.floor(this.clock.now() / 1000);
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setJti(uuid())
      .setSubject(subject)
      .setAudience(identityAudience)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + Math.max(1, Math.floor(ttlMs / 1000)))
      .sign(this.keyring.identityKey);
  }

  /** An introduction token for a node in `pool` (named `name`, or any name when empty). */
  introduction(pool: string, name: string, ttlMs: number): Promise<string> {
    return this.sign(
      { nomad_node_pool: pool, nomad_node_name: name },
      ['node-introduction', region, pool, name, 'default'].join(':'),
      ttlMs,
    );
  }

  /** A node identity. */
  node(node: { ID: string; NodePool: string; NodeClass: string; Datacenter: string }, ttlMs: number): Promise<string> {
    return this.sign(
      {
        nomad_node_id: node.ID,
        nomad_node_pool: node.NodePool,
        nomad_node_class: node.NodeClass,
        nomad_node_datacenter: node.Datacenter,
      },
      ['node', region, node.NodePool, node.ID, 'default'].join(':'),
      ttlMs,
    );
  }

  /**
   * The claims of a JWT this service signed, or undefined when it is not one (wrong signature or algorithm, not
   * for this audience, malformed) or, unless `allowExpired`, when it has expired or is not yet valid.
   */
  async verify(jwt: string, options: { allowExpired?: boolean } = {}): Promise<VerifiedIdentity | undefined> {
    let payload: Record<string, unknown>;
    try {
      const now = this.clock.now();
      ({ payload } = await jwtVerify(jwt, this.keyring.identityKey, {
        algorithms: ['HS256'],
        audience: identityAudience,
        currentDate: new Date(now),
        // An expired identity still proves which node it was issued to (a re-registration after an outage).
        ...(options.allowExpired ? { maxTokenAge: undefined, clockTolerance: Number.MAX_SAFE_INTEGER } : {}),
      }));
    } catch (error) {
      if (error instanceof errors.JOSEError) return undefined;
      throw error;
    }
    const subject = String(payload.sub ?? '');
    if (subject.startsWith('node-introduction:') && typeof payload.nomad_node_pool === 'string') {
      return {
        kind: 'introduction',
        pool: payload.nomad_node_pool,
        name: typeof payload.nomad_node_name === 'string' ? payload.nomad_node_name : '',
      };
    }
    if (subject.startsWith('node:') && typeof payload.nomad_node_id === 'string') {
      return {
        kind: 'node',
        nodeId: payload.nomad_node_id,
        pool: String(payload.nomad_node_pool ?? ''),
        datacenter: String(payload.nomad_node_datacenter ?? ''),
        issuedAtMs: Number(payload.iat) * 1000,
        expiresAtMs: Number(payload.exp) * 1000,
      };
    }
    return undefined;
  }
}

/** Whether a node identity is due for renewal at `now` (67 % of its lifetime passed). */
export const renewalDue = (identity: NodeIdentityClaims, now: number): boolean =>
  now >= identity.issuedAtMs + identityRenewalShare * (identity.expiresAtMs - identity.issuedAtMs);
