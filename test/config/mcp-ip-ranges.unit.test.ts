import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { embeddedIpv4, formatIp, isAllowedAddress, isMetadataHost, isPublicAddress, parseCidr, parseIp } from "../../lib/config/mcp-ip-ranges.js";
import { propertyRuns } from "../support/property-runs.js";

const ip = (text: string) => {
  const parsed = parseIp(text);
  if (!parsed) throw new Error(`not an address: ${text}`);
  return parsed;
};

/** Addresses (as the resolver or WHATWG URL gives them) that are not the public internet, one per kind the check must know. */
const NOT_PUBLIC = [
  "127.0.0.1",
  "127.255.0.9",
  "0.0.0.0",
  "10.1.2.3",
  "172.16.0.1",
  "172.31.255.255",
  "192.168.1.1",
  "100.64.0.1",
  "169.254.169.254",
  "169.254.170.2",
  "192.0.0.170",
  "198.18.0.1",
  "224.0.0.1",
  "255.255.255.255",
  "::",
  "::1",
  "[::1]",
  "::ffff:a9fe:a9fe",
  "::ffff:169.254.169.254",
  "::169.254.169.254",
  "::a9fe:a9fe",
  "64:ff9b::a9fe:a9fe",
  "64:ff9b::127.0.0.1",
  "64:ff9b:1::1",
  "::ffff:0:7f00:1",
  "2002:a9fe:a9fe::1",
  "2002:7f00:1::",
  "2001:0:4136:e378:8000:63bf:3fff:fdd2",
  "2001:db8::1",
  "fd00:ec2::254",
  "fc00::1",
  "fe80::1",
  "fe80::1%eth0",
  "fec0::1",
  "ff02::1",
  "100::1",
];
const PUBLIC = [
  "8.8.8.8",
  "1.1.1.1",
  "52.94.236.248",
  "2606:4700:4700::1111",
  "2a00:1450:4001:80b::200e",
  "::ffff:8.8.8.8",
  "64:ff9b::808:808",
  "2002:808:808::1",
];

describe("parseIp", () => {
  it("returns one value for every spelling of an IPv6 address", () => {
    expect(ip("::ffff:169.254.169.254")).toEqual(ip("::ffff:a9fe:a9fe"));
    expect(ip("[0:0:0:0:0:ffff:a9fe:a9fe]")).toEqual(ip("::ffff:a9fe:a9fe"));
    expect(formatIp(ip("::ffff:a9fe:a9fe"))).toBe("0:0:0:0:0:ffff:a9fe:a9fe");
  });

  it("returns undefined for what is not an address", () => {
    for (const text of ["localhost", "169.254.169.254.nip.io", "1.2.3", "::g", "", "[::1"]) expect(parseIp(text)).toBeUndefined();
  });
});

describe("isPublicAddress", () => {
  it("returns false for loopback, private, link-local, metadata, CGNAT, unspecified, multicast and their IPv6 forms", () => {
    for (const text of NOT_PUBLIC) expect(isPublicAddress(ip(text)), text).toBe(false);
  });

  it("returns true for public unicast addresses, and for IPv6 forms carrying a public IPv4 address", () => {
    for (const text of PUBLIC) expect(isPublicAddress(ip(text)), text).toBe(true);
  });

  it("returns false for every IPv6 form of a not-public IPv4 address (IPv4-mapped, translated, NAT64, IPv4-compatible, 6to4)", () => {
    const privateV4 = fc.oneof(
      fc.tuple(fc.constant(127), fc.nat(255), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(10), fc.nat(255), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(169), fc.constant(254), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(192), fc.constant(168), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(100), fc.integer({ min: 64, max: 127 }), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(0), fc.nat(255), fc.nat(255), fc.nat(255)),
    );
    const hex = ([a, b, c, d]: number[]) => [((a! << 8) | b!).toString(16), ((c! << 8) | d!).toString(16)];
    const forms = [
      (q: number[]) => q.join("."),
      (q: number[]) => `::ffff:${q.join(".")}`,
      (q: number[]) => `::ffff:${hex(q).join(":")}`,
      (q: number[]) => `::ffff:0:${hex(q).join(":")}`,
      (q: number[]) => `64:ff9b::${hex(q).join(":")}`,
      (q: number[]) => `64:ff9b::${q.join(".")}`,
      (q: number[]) => `::${q.join(".")}`,
      (q: number[]) => `2002:${hex(q).join(":")}::1`,
    ];
    fc.assert(
      fc.property(privateV4, fc.integer({ min: 0, max: forms.length - 1 }), (quad, form) => {
        const text = forms[form]!(quad);
        const parsed = parseIp(text);
        return parsed !== undefined && !isPublicAddress(parsed);
      }),
      { numRuns: propertyRuns(500) },
    );
  });
});

describe("embeddedIpv4", () => {
  it("returns the IPv4 address a 6to4 or NAT64 address carries, and none for native IPv6", () => {
    expect(formatIp(embeddedIpv4(ip("2002:a9fe:a9fe::1"))!)).toBe("169.254.169.254");
    expect(formatIp(embeddedIpv4(ip("64:ff9b::7f00:1"))!)).toBe("127.0.0.1");
    expect(embeddedIpv4(ip("::1"))).toBeUndefined();
    expect(embeddedIpv4(ip("2606:4700:4700::1111"))).toBeUndefined();
  });
});

describe("isAllowedAddress", () => {
  it("returns true for an address in an allowed network, or whose IPv4 address is", () => {
    const loopback = [parseCidr("127.0.0.0/8")!, parseCidr("::1/128")!];
    expect(isAllowedAddress(ip("127.0.0.1"), loopback)).toBe(true);
    expect(isAllowedAddress(ip("::ffff:127.0.0.1"), loopback)).toBe(true);
    expect(isAllowedAddress(ip("::1"), loopback)).toBe(true);
    expect(isAllowedAddress(ip("169.254.169.254"), loopback)).toBe(false);
    expect(isAllowedAddress(ip("10.0.0.1"), [])).toBe(false);
  });
});

describe("parseCidr", () => {
  it("returns a network for CIDRs and single addresses, and undefined for what is not one", () => {
    expect(parseCidr("10.20.0.0/16")).toMatchObject({ version: 4, bits: 16 });
    expect(parseCidr("::1")).toMatchObject({ version: 6, bits: 128 });
    for (const text of ["10.0.0.0/33", "::/129", "10.0.0.0/8/1", "intranet", "10.0.0.0/x"]) expect(parseCidr(text)).toBeUndefined();
  });
});

describe("isMetadataHost", () => {
  it("returns true for the metadata services in every spelling a URL gives, and false for other hosts", () => {
    const hostOf = (url: string) => new URL(url).hostname;
    for (const url of [
      "http://169.254.169.254/",
      "http://0xa9fea9fe/",
      "http://2852039166/",
      "http://0251.0376.0251.0376/",
      "http://169.254.43518/",
      "http://[::ffff:a9fe:a9fe]/",
      "http://[::169.254.169.254]/",
      "http://[64:ff9b::a9fe:a9fe]/",
      "http://[fd00:ec2::254]/",
      "http://metadata.google.internal./",
      "http://instance-data.ec2.internal/",
      "http://METADATA.google.internal/",
    ]) {
      expect(isMetadataHost(hostOf(url)), url).toBe(true);
    }
    for (const url of ["https://wiki.internal.example/mcp", "http://127.0.0.1:3000/mcp", "https://8.8.8.8/"])
      expect(isMetadataHost(hostOf(url)), url).toBe(false);
  });
});
