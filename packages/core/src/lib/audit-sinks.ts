import { createSocket } from 'node:dgram';
import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { hostname } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { DurationError, parseDuration } from './duration.ts';

/** Options that cannot make a working sink; the message names the option. */
export class AuditOptionError extends Error {}
const badRequest = (message: string) => new AuditOptionError(message);

/** Where one audit device (secrets service) or sink (scheduler) writes its lines. `write` resolves once the line is handed to its destination. */
export interface AuditSink {
  write(line: string): Promise<void>;
  close(): void;
}

export type DeviceType = 'file' | 'socket' | 'syslog';
export const deviceTypes: readonly DeviceType[] = ['file', 'socket', 'syslog'];

/**
 * A device's sink from its type and options, as Vault's `file`, `socket` and `syslog` audit devices take them.
 * Throws a 400 naming the option when the options cannot work.
 */
export function openSink(type: string, options: Record<string, string>, stdout: (line: string) => void): AuditSink {
  if (type === 'file') return fileSink(options, stdout);
  if (type === 'socket') return socketSink(options);
  if (type === 'syslog') return syslogSink(options);
  throw badRequest(`unknown audit device type "${type}" (supported: ${deviceTypes.join(', ')})`);
}

function fileSink(options: Record<string, string>, stdout: (line: string) => void): AuditSink {
  const filePath = options.file_path ?? options.path;
  if (!filePath) throw badRequest('"file_path" is required for a file audit device');
  if (filePath === 'discard') return { write: async () => {}, close() {} };
  if (filePath === 'stdout') return { write: async (line) => stdout(line), close() {} };
  if (!filePath.startsWith('/'))
    throw badRequest(`"file_path" must be an absolute path, "stdout" or "discard", not "${filePath}"`);
  const mode = fileMode(options.mode);
  let moded = false;
  return {
    async write(line) {
      // O_NOFOLLOW: a symlink put where the audit file was is never written through.
      const handle = await open(filePath, appendNoFollow, mode || 0o600);
      try {
        await handle.appendFile(line);
        // Vault sets the mode once when it opens the file; mode "0000" leaves it as it is.
        if (!moded && mode !== 0) await handle.chmod(mode);
        moded = true;
      } finally {
        await handle.close();
      }
    },
    close() {},
  };
}

const appendNoFollow = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;

/**
 * A file device's `mode` (default 0600). An execute bit is refused, as Vault refuses it since CVE-2025-6000 /
 * HCSEC-2025-14: an audit file whose lines an attacker partly chooses must never become a program.
 */
function fileMode(modeText = '0600'): number {
  if (!/^0?[0-7]{3}$/.test(modeText))
    throw badRequest(`"mode" must be an octal file mode such as "0600", not "${modeText}"`);
  const mode = Number.parseInt(modeText, 8);
  if ((mode & 0o111) !== 0)
    throw badRequest(`"mode" must not be executable: "${modeText}" sets an execute bit (use "0600" or "0640")`);
  return mode;
}

/**
 * Where an absolute path really leads: `.` and `..` resolved, and every symlink of the part that exists followed
 * (the file itself may not exist yet; a symlink at its own name is followed too).
 */
export async function realDestination(filePath: string): Promise<string> {
  if (!isAbsolute(filePath)) throw badRequest(`"file_path" must be an absolute path, not "${filePath}"`);
  let existing = resolve(filePath);
  const rest: string[] = [];
  for (;;) {
    try {
      return join(await realpath(existing), ...rest);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || existing === dirname(existing)) throw error;
      rest.unshift(basename(existing));
      existing = dirname(existing);
    }
  }
}

function socketSink(options: Record<string, string>): AuditSink {
  const address = options.address;
  if (!address) throw badRequest('"address" is required for a socket audit device');
  return networkSink(address, options.socket_type ?? 'tcp', options.write_timeout ?? '2s');
}

/** A TCP or UDP destination `host:port`; one line per write (one datagram over UDP). */
function networkSink(address: string, socketType: string, writeTimeout: string): AuditSink {
  const match = address.match(/^\[?([^\]]+?)\]?:(\d{1,5})$/);
  const port = Number(match?.[2]);
  if (!match || port < 1 || port > 65535) throw badRequest(`"address" must be host:port, not "${address}"`);
  const host = match[1] as string;
  if (socketType !== 'tcp' && socketType !== 'udp')
    throw badRequest(`"socket_type" must be tcp or udp, not "${socketType}"`);
  const timeoutMs = Math.max(1, writeTimeoutSeconds(writeTimeout)) * 1000;
  if (socketType === 'udp') {
    const udp = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    udp.unref();
    return {
      write: (line) =>
        new Promise((resolve, reject) => udp.send(line, port, host, (error) => (error ? reject(error) : resolve()))),
      close: () => udp.close(),
    };
  }
  return tcpSink(host, port, timeoutMs);
}

const facilities = [
  'KERN',
  'USER',
  'MAIL',
  'DAEMON',
  'AUTH',
  'SYSLOG',
  'LPR',
  'NEWS',
  'UUCP',
  'CRON',
  'AUTHPRIV',
  'FTP',
];

/**
 * Vault's `syslog` device writes to the local syslog daemon; a function has none, so this one sends RFC 5424
 * messages to a syslog collector at `address` (default 127.0.0.1:514, `socket_type` udp or tcp with one message a
 * line), with Vault's options `facility` (default AUTH) and `tag` (default keyhaven), severity info.
 */
function syslogSink(options: Record<string, string>): AuditSink {
  const facilityName = (options.facility ?? 'AUTH').toUpperCase();
  const local = facilityName.match(/^LOCAL([0-7])$/);
  const facility = local ? 16 + Number(local[1]) : facilities.indexOf(facilityName);
  if (facility < 0)
    throw badRequest(
      `"facility" must be a syslog facility (AUTH, DAEMON, LOCAL0…LOCAL7, …), not "${options.facility}"`,
    );
  const tag = options.tag ?? 'keyhaven';
  if (!/^[!-~]{1,48}$/.test(tag))
    throw badRequest(`"tag" must be 1 to 48 printable characters without spaces, not "${tag}"`);
  const sink = networkSink(
    options.address ?? '127.0.0.1:514',
    options.socket_type ?? 'udp',
    options.write_timeout ?? '2s',
  );
  const host = hostname() || '-';
  return {
    write: (line) =>
      line === ''
        ? sink.write('')
        : sink.write(
            `<${facility * 8 + 6}>1 ${new Date().toISOString()} ${host} ${tag} ${process.pid} - - ${line.replace(/\n$/, '')}\n`,
          ),
    close: () => sink.close(),
  };
}

/** One connection per device and process, opened on first use and again after it breaks. */
function tcpSink(host: string, port: number, timeoutMs: number): AuditSink {
  let socket: Socket | undefined;
  const connected = () =>
    new Promise<Socket>((resolve, reject) => {
      if (socket && !socket.destroyed) return resolve(socket);
      const fresh = connect({ host, port, timeout: timeoutMs });
      fresh.unref();
      const fail = (error: Error) => {
        fresh.destroy();
        reject(error);
      };
      fresh.once('error', fail);
      fresh.once('timeout', () => fail(new Error(`connect to ${host}:${port} timed out`)));
      fresh.once('connect', () => {
        fresh.off('error', fail);
        fresh.on('error', () => fresh.destroy());
        fresh.on('close', () => {
          if (socket === fresh) socket = undefined;
        });
        socket = fresh;
        resolve(fresh);
      });
    });
  const send = async (line: string) => {
    const target = await connected();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        target.destroy();
        reject(new Error(`write to ${host}:${port} timed out`));
      }, timeoutMs);
      target.write(line, (error) => {
        clearTimeout(timer);
        if (error) {
          target.destroy();
          reject(error);
        } else resolve();
      });
    });
  };
  return {
    // A peer that went away is noticed on the next write: retry once on a new connection, as Vault's socket device does.
    write: (line) => send(line).catch(() => send(line)),
    close: () => socket?.destroy(),
  };
}

/** Checks that a file sink's destination can be written now, so enabling a device that cannot work is a 400. */
export async function probeFile(options: Record<string, string>): Promise<void> {
  const filePath = options.file_path ?? options.path;
  if (!filePath?.startsWith('/')) return;
  try {
    const handle = await open(filePath, appendNoFollow, 0o600);
    await handle.close();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw badRequest(
      `cannot open audit file "${filePath}": ${code === 'ELOOP' ? 'it is a symbolic link' : (error as Error).message}`,
    );
  }
}

function writeTimeoutSeconds(text: string): number {
  try {
    return parseDuration(text);
  } catch (error) {
    if (error instanceof DurationError) throw badRequest(`"write_timeout" ${error.message}`);
    throw error;
  }
}
