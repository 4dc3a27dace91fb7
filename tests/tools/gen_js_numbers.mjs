// Node's answers for the hard cases of engine/js/numbers.py.
//
// Usage (from the repository root):
//   node tests/tools/gen_js_numbers.mjs > tests/golden/js-numbers/numbers.json
//
// Doubles travel as 16 hex digits of their IEEE-754 bits (big-endian), so -0,
// NaN, the infinities and every last bit survive JSON. Strings travel as JSON
// strings (lone surrogates and NUL included). tests/engine/test_js_numbers.py
// checks every case; after a change here, regenerate and commit both files.
// Any Node works (the rules are ECMA-262's); the file records the version used.

const bits = (x) => {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(x);
  return b.toString("hex");
};
const num = (x) => ({ bits: bits(x), text: Object.is(x, -0) ? "-0" : String(x) });

const WS =
  "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" +
  "\u2028\u2029\u202f\u205f\u3000\ufeff";
const F300 = "f".repeat(300);
const D400 = "9".repeat(400);
const ONE400 = "1" + "0".repeat(399);

const numberStrings = [
  "", " ", WS, WS + "12" + WS, "\u008512", "12\u0085", "\u180e12", "\u200b12", "\u000012", "12\u0000",
  "12", "-12", "+12", "-0", "+0", "00012", "0012.50", "0.5", ".5", "5.", ".", "+.5", "-.5e1", "e5", "1e5",
  "1E-7", "1e", "1e+", "1e400", "-1e400", "1e-400", "1e1000000000", D400, "-" + D400, ONE400,
  "0x" + F300, "0X" + F300.toUpperCase(), "-0x" + F300, "0x1F", "0X1f", "0x", "-0x10", "+0x10", "0x1_F",
  "0b101", "0B101", "0b102", "0b", "0o17", "0O17", "0o8", "0o", "0xg", "1_000", "1__0", "_1", "1,000",
  "1 000", "infinity", "INFINITY", "Infinity", "-Infinity", "+Infinity", "Infinityx", "inf", "nan", "NaN",
  "١٢", "१२", "１２", "12px", "true", "null", "[]", "5 ", "\u00a0", "1.7976931348623157e308",
  "1.7976931348623158e308", "1.7976931348623159e308", "2.4703282292062327e-324", "2.4703282292062328e-324",
  "5e-324", "9007199254740993", "123456789012345678901234567890", "0.1", "0.30000000000000004",
  "3.14abc", "\ud800", "12\ud800",
];

const jsonValues = [
  "null", "true", "false", "0", "-0", "1.5", "1e400", "-1e400", "1e-400", ONE400, "-" + D400,
  "9007199254740993", "12345678901234567890", "[]", "[5]", '[" 7 "]', "[1,2]", "[[[3]]]", "[null]",
  '[""]', "{}", '{"a":1}', '"0x' + F300 + '"', '"  12  "', '"1_000"', '"١٢"', '"nan"', '"infinity"', '""',
  JSON.stringify(WS), "[[]]", "[true]", "[[1],[2]]",
];

const doubles = [
  0, -0, 1, -1, 1.5, -1.5, 0.1, 0.3, 1 / 3, 2 / 3, 100, 1e20, 1e21, 1.2345678901234568e20, 1.2492086086069006e17,
  123456789012345680000, 1e-6, 1e-7, 1.5e-7, 0.000001234, -1e-7, 5e-324, Number.MAX_VALUE, Number.MIN_VALUE,
  2 ** 53, 2 ** 53 + 2, 2 ** 64, 1e100, 12345678.9, 4.35, 0.5, 2.5, -2.5, 1e300, Infinity, -Infinity, NaN,
];

const parseIntCases = [
  ["12px"], ["  -12"], ["0x1F"], ["0x1F", 16], ["0x1F", 10], ["1F", 16], ["z", 36], ["Z", 36], ["12", 1],
  ["12", 37], ["12", 0], ["12", -1], ["12", 2 ** 32 + 10], ["12", 16.9], ["12", NaN], ["12", Infinity], [""],
  ["-"], ["-0"], ["+0"], ["١٢"], ["１２"], [D400], ["0x" + F300], ["1e3"], [WS + "42"], ["\u008542"],
  ["1_000"], ["Infinity"], ["12", 2], ["2", 2], ["9007199254740993"], ["0".repeat(5000) + "1", 3],
  ["1" + "0".repeat(5000), 7], ["1" + "0".repeat(5000)], ["-0x10"], ["0x"], ["0b11"], ["0o17"], [".5"],
  ["\u212a", 36],
];

const rounds = [
  0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, -0.49999999999999994, -0.4, 0.4, -0, 0,
  4503599627370495.5, 2 ** 52 + 1, 1e300, -1e300, Infinity, -Infinity, NaN, 62.5, 61.49999, -7.5e-1,
];

const pairs = [
  [1.5, 2], [2, 1.5], [-0, 0], [0, -0], [NaN, 2], [2, NaN], [Infinity, 2], [-Infinity, 2], [3, 2], [-1, 2],
  [1e400, 2], [-5e-324, 0], [5e-324, -0],
];

const sliceEnds = [
  [0, 0], [0, 1], [0, 1.5], [0, 1.9999], [0, 2], [0, -1], [0, -0.5], [0, -0.99], [0, -1.5], [0, -4], [0, -5],
  [0, -6], [0, Infinity], [0, -Infinity], [0, NaN], [0, -0], [0, 5.9], [0, 6], [0, 1e400], [0, -1e400],
  [-2, undefined], [1.7, 3.2], [NaN, 2], [-Infinity, 2], [Infinity, 2], [3, 1], [-1.5, undefined],
];

const lengths = [-1, 0, 0.5, 1, 2.9, -0.5, 2 ** 53, 2 ** 53 + 2, 2 ** 60, Infinity, -Infinity, NaN, 1e400];

// ToLength observed through Array.prototype.at(-1): it reads key String(ToLength(len) - 1).
const toLength = (len) => {
  let seen = null;
  const target = new Proxy(
    { length: len },
    {
      get(t, k) {
        if (k !== "length") seen = String(k);
        return t[k];
      },
    },
  );
  Array.prototype.at.call(target, -1);
  return seen === null ? 0 : Number(seen) + 1;
};

const out = {
  generated_by: "tests/tools/gen_js_numbers.mjs",
  node: process.version,
  number_of_string: numberStrings.map((s) => ({ input: s, result: num(Number(s)) })),
  number_of_json: jsonValues.map((t) => ({ json: t, result: num(Number(JSON.parse(t))) })),
  string_of_number: doubles.map((x) => ({ input: num(x), result: String(x) })),
  string_of_json: jsonValues.map((t) => ({ json: t, result: String(JSON.parse(t)) })),
  parse_int: parseIntCases.map(([s, r]) => ({
    input: s,
    radix: r === undefined ? null : num(r),
    result: num(r === undefined ? parseInt(s) : parseInt(s, r)),
  })),
  math_round: rounds.map((x) => ({ input: num(x), result: num(Math.round(x)) })),
  math_min: pairs.map(([a, b]) => ({ input: [num(a), num(b)], result: num(Math.min(a, b)) })),
  math_max: pairs.map(([a, b]) => ({ input: [num(a), num(b)], result: num(Math.max(a, b)) })),
  slice_of_five: sliceEnds.map(([a, b]) => ({
    start: num(a),
    end: b === undefined ? null : num(b),
    result: [0, 1, 2, 3, 4].slice(a, b),
  })),
  to_length: lengths.map((x) => ({ input: num(x), result: toLength(x) })),
  // readPositiveEnv (context-mode 1.0.169 server.js): Number(raw), finite and > 0, else the default
  read_positive_env: numberStrings.map((s) => {
    const parsed = Number(s);
    return { input: s, result: s && Number.isFinite(parsed) && parsed > 0 ? num(parsed) : null };
  }),
};
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
