import { isIPv4, isIPv6 } from "node:net";

/** An address as a number: 32 bits for IPv4, 128 for IPv6. */
export interface IpAddress {
  version: 4 | 6;
  value: bigint;
}

/** A network: an address and how many leading bits it fixes. */
export interface Cidr {
  version: 4 | 6;
  base: bigint;
  bits: number;
}

/**
 * Parses an address as the resolver or WHATWG URL writes it: dotted IPv4, or IPv6 (brackets
 * allowed, a zone id dropped, an embedded dotted quad read). Undefined for anything else.
 */
export function parseIp(text: string): IpAddress | undefined {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const noZone = bare.split("%")[0]!;
  if (isIPv4(noZone)) return { version: 4, value: ipv4Value(noZone) };
  if (!isIPv6(noZone)) return undefined;
  let head = noZone;
  let tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(noZone);
  if (dotted) {
    const v4 = Number(ipv4Value(dotted[1]!));
    tail = [v4 >>> 16, v4 & 0xffff];
    head = noZone.slice(0, -dotted[1]!.length);
    if (head.endsWith(":") && !head.endsWith("::")) head = head.slice(0, -1);
  }
  const [left, right] = head.split("::") as [string, string | undefined];
  const words = (s: string | undefined) =>
    s
      ? s
          .split(":")
          .filter((w) => w !== "")
          .map((w) => Number.parseInt(w, 16))
      : [];
  const l = words(left);
  const r = [...words(right), ...tail];
  const fill = right === undefined ? [] : new Array<number>(8 - l.length - r.length).fill(0);
  const all = right === undefined ? [...l, ...tail] : [...l, ...fill, ...r];
  if (all.length !== 8) return undefined;
  return { version: 6, value: all.reduce((acc, w) => (acc << 16n) | BigInt(w), 0n) };
}

function ipv4Value(dotted: string): bigint {
  return dotted.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

/** Parses `a.b.c.d/n`, `x::y/n`, or a single address (a /32 or /128); undefined when malformed. */
export function parseCidr(text: string): Cidr | undefined {
  const [addr, prefix, extra] = text.trim().split("/");
  if (extra !== undefined || addr === undefined) return undefined;
  const ip = parseIp(addr);
  if (!ip) return undefined;
  const max = ip.version === 4 ? 32 : 128;
  const bits = prefix === undefined ? max : /^\d{1,3}$/.test(prefix) ? Number(prefix) : Number.NaN;
  if (!(bits >= 0 && bits <= max)) return undefined;
  return { version: ip.version, base: ip.value & mask(ip.version, bits), bits };
}

function mask(version: 4 | 6, bits: number): bigint {
  const width = BigInt(version === 4 ? 32 : 128);
  return bits === 0 ? 0n : ((1n << BigInt(bits)) - 1n) << (width - BigInt(bits));
}

/** Whether `ip` is in `cidr`. */
export function inCidr(ip: IpAddress, cidr: Cidr): boolean {
  return ip.version === cidr.version && (ip.value & mask(cidr.version, cidr.bits)) === cidr.base;
}

const cidrs = (...list: string[]) => list.map((c) => parseCidr(c)!);

/**
 * IPv4 networks that are not the public internet (RFC 6890's special-purpose registry): this
 * network, private, CGNAT, loopback, link-local (the instance metadata service), IETF protocol
 * assignments, documentation, the 6to4 relay, benchmarking, multicast, reserved and broadcast.
 */
const NOT_PUBLIC_V4 = cidrs(
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.88.99.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
);

/** IPv6 forms that carry an IPv4 address in their low 32 bits: IPv4-mapped, IPv4-translated (SIIT), NAT64 (64:ff9b::/96), IPv4-compatible. */
const EMBEDS_V4_LOW = cidrs("::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96", "::/96");
/** 6to4 (2002::/16) carries its IPv4 address in bits 16 to 48. */
const SIX_TO_FOUR = parseCidr("2002::/16")!;
/** Global unicast is 2000::/3; within it, these are not the public internet (IETF assignments, Teredo, documentation, ORCHID). */
const GLOBAL_UNICAST = parseCidr("2000::/3")!;
const NOT_PUBLIC_V6_IN_GLOBAL = cidrs("2001::/23", "2001:db8::/32", "3fff::/20");

/**
 * The IPv4 address an IPv6 address carries (IPv4-mapped, translated, NAT64, IPv4-compatible,
 * 6to4), which is where a packet to it may end up; undefined when it carries none.
 */
export function embeddedIpv4(ip: IpAddress): IpAddress | undefined {
  if (ip.version !== 6) return undefined;
  // :: and ::1 are IPv6's own unspecified and loopback, not IPv4-compatible forms.
  if (ip.value <= 1n) return undefined;
  if (EMBEDS_V4_LOW.some((c) => inCidr(ip, c))) return { version: 4, value: ip.value & 0xffffffffn };
  if (inCidr(ip, SIX_TO_FOUR)) return { version: 4, value: (ip.value >> 80n) & 0xffffffffn };
  return undefined;
}

/**
 * Whether `ip` is a public unicast address: IPv4 outside every special-purpose network; IPv6 in
 * global unicast (2000::/3) outside its special parts, and an IPv6 form that carries an IPv4
 * address only when that address is public. Loopback, private, link-local, metadata, CGNAT,
 * unspecified, multicast and documentation addresses, in any spelling, are not.
 */
export function isPublicAddress(ip: IpAddress): boolean {
  const v4 = ip.version === 4 ? ip : embeddedIpv4(ip);
  if (v4) return !NOT_PUBLIC_V4.some((c) => inCidr(v4, c));
  return inCidr(ip, GLOBAL_UNICAST) && !NOT_PUBLIC_V6_IN_GLOBAL.some((c) => inCidr(ip, c));
}

/** Whether `ip`, or the IPv4 address it carries, is in one of `allowed`. */
export function isAllowedAddress(ip: IpAddress, allowed: readonly Cidr[]): boolean {
  const v4 = embeddedIpv4(ip);
  return allowed.some((c) => inCidr(ip, c) || (v4 !== undefined && inCidr(v4, c)));
}

/** The text of an address, for messages (IPv4 dotted, IPv6 as eight groups). */
export function formatIp(ip: IpAddress): string {
  if (ip.version === 4) return [24n, 16n, 8n, 0n].map((s) => String((ip.value >> s) & 0xffn)).join(".");
  return Array.from({ length: 8 }, (_, i) => ((ip.value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(":");
}

/** Link-local (the instance metadata services: 169.254.169.254, AWS's fd00:ec2::254 and fe80::/10). */
const METADATA_NETWORKS = cidrs("169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128");
/** The metadata services' own names (GCP, AWS, Azure's and OpenStack's short forms). */
const METADATA_NAMES = new Set(["metadata.google.internal", "metadata", "instance-data", "instance-data.ec2.internal", "metadata.azure.internal"]);

/**
 * Whether a URL's host is an instance metadata service, in any spelling a URL can give it: the
 * addresses, IPv4-mapped, NAT64, IPv4-compatible or 6to4, the services' names with or without a
 * final dot. Names that resolve there (`169.254.169.254.nip.io`) are refused when connecting.
 */
export function isMetadataHost(hostname: string): boolean {
  const ip = parseIp(hostname);
  if (ip) {
    const v4 = embeddedIpv4(ip);
    return METADATA_NETWORKS.some((c) => inCidr(ip, c) || (v4 !== undefined && inCidr(v4, c)));
  }
  return METADATA_NAMES.has(hostname.toLowerCase().replace(/\.+$/, ""));
}
