/**
 * The CIDR functions of Nomad's job-file table (go-cty-funcs/cidr, Terraform's): `cidrhost`, `cidrnetmask`,
 * `cidrsubnet`, `cidrsubnets`, over IPv4 and IPv6 prefixes, with addresses as big integers.
 */
import ipaddr from 'ipaddr.js';
import type { HclFunction } from './hcl-context.ts';
import { HclEvalError, type HclValue, toNumber, toText } from './hcl-values.ts';

interface Prefix {
  /** The network's first address. */
  network: bigint;
  length: number;
  /** 32 or 128. */
  width: number;
}

function parsePrefix(value: HclValue | undefined): Prefix {
  const text = toText(value as HclValue, 'the prefix');
  let parsed: [ipaddr.IPv4 | ipaddr.IPv6, number];
  try {
    parsed = ipaddr.parseCIDR(text);
  } catch {
    throw new HclEvalError('Invalid prefix', `invalid CIDR expression: invalid CIDR address: ${text}`);
  }
  const [address, length] = parsed;
  const width = address.kind() === 'ipv4' ? 32 : 128;
  const whole = address.toByteArray().reduce((sum, byte) => (sum << 8n) | BigInt(byte), 0n);
  const host = (1n << BigInt(width - length)) - 1n;
  return { network: whole & ~host, length, width };
}

function addressText(value: bigint, width: number): string {
  const bytes: number[] = [];
  for (let shift = width - 8; shift >= 0; shift -= 8) bytes.push(Number((value >> BigInt(shift)) & 255n));
  const address = ipaddr.fromByteArray(bytes);
  return address.kind() === 'ipv6' ? (address as ipaddr.IPv6).toRFC5952String() : address.toString();
}

const prefixText = (network: bigint, length: number, width: number) => `${addressText(network, width)}/${length}`;

function whole(value: HclValue | undefined, what: string): bigint {
  const number = toNumber(value as HclValue, what);
  if (!Number.isInteger(number)) throw new HclEvalError('Invalid argument', `${what} must be a whole number`);
  return BigInt(number);
}

function subnet(prefix: Prefix, newbits: bigint, netnum: bigint): Prefix {
  const length = prefix.length + Number(newbits);
  if (newbits < 0n || length > prefix.width)
    throw new HclEvalError(
      'Invalid argument',
      `insufficient address space to extend prefix of ${prefix.length} by ${newbits}`,
    );
  if (netnum < 0n || netnum >= 1n << newbits)
    throw new HclEvalError(
      'Invalid argument',
      `prefix extension of ${newbits} does not accommodate a subnet numbered ${netnum}`,
    );
  return { network: prefix.network | (netnum << BigInt(prefix.width - length)), length, width: prefix.width };
}

const size = (length: number, width: number) => 1n << BigInt(width - length);

export const cidrFunctions: Record<string, HclFunction> = {
  cidrhost: {
    min: 2,
    max: 2,
    run: ([prefixValue, hostValue]) => {
      const prefix = parsePrefix(prefixValue);
      const hosts = size(prefix.length, prefix.width);
      let host = whole(hostValue, 'the host number');
      if (host < 0n) host += hosts;
      if (host < 0n || host >= hosts)
        throw new HclEvalError(
          'Invalid argument',
          `prefix of ${prefix.length} does not accommodate a host numbered ${whole(hostValue, 'the host number')}`,
        );
      return addressText(prefix.network + host, prefix.width);
    },
  },
  cidrnetmask: {
    min: 1,
    max: 1,
    run: ([prefixValue]) => {
      const prefix = parsePrefix(prefixValue);
      if (prefix.width !== 32) throw new HclEvalError('Invalid argument', 'only IPv4 networks have a netmask');
      return addressText(((1n << 32n) - 1n) ^ (size(prefix.length, 32) - 1n), 32);
    },
  },
  cidrsubnet: {
    min: 3,
    max: 3,
    run: ([prefixValue, newbits, netnum]) => {
      const prefix = parsePrefix(prefixValue);
      const out = subnet(prefix, whole(newbits, 'newbits'), whole(netnum, 'netnum'));
      return prefixText(out.network, out.length, out.width);
    },
  },
  cidrsubnets: {
    min: 1,
    run: ([prefixValue, ...bits]) => {
      const prefix = parsePrefix(prefixValue);
      const end = prefix.network + size(prefix.length, prefix.width);
      const out: string[] = [];
      let next = prefix.network;
      for (const value of bits) {
        const newbits = whole(value, 'newbits');
        const length = prefix.length + Number(newbits);
        if (newbits < 1n || length > prefix.width)
          throw new HclEvalError(
            'Invalid argument',
            `would extend prefix to ${length} bits, which is too long for an IPv${prefix.width === 32 ? 4 : 6} address`,
          );
        const block = size(length, prefix.width);
        const start = ((next + block - 1n) / block) * block;
        if (start + block > end)
          throw new HclEvalError(
            'Invalid argument',
            `not enough remaining address space for a subnet with a prefix of ${length} bits after ${out.at(-1) ?? prefixText(prefix.network, prefix.length, prefix.width)}`,
          );
        out.push(prefixText(start, length, prefix.width));
        next = start + block;
      }
      return out;
    },
  },
};
