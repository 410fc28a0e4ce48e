// Node's own zlib decodes what cspd compressed: node node_decode.mjs URL CODING
// GETs URL with Accept-Encoding: CODING over HTTP/1.1, decodes the body with zlib (gunzip or
// brotliDecompress), and prints one JSON line: the Content-Encoding it got and the decoded body.
import http from "node:http";
import zlib from "node:zlib";

const [url, coding] = process.argv.slice(2);
http.get(url, { headers: { "Accept-Encoding": coding } }, (res) => {
  const parts = [];
  res.on("data", (part) => parts.push(part));
  res.on("end", () => {
    const raw = Buffer.concat(parts);
    const encoding = res.headers["content-encoding"] || "";
    const decoded = encoding === "gzip" ? zlib.gunzipSync(raw)
                  : encoding === "br" ? zlib.brotliDecompressSync(raw) : raw;
    console.log(JSON.stringify({ encoding, wire: raw.length, body: decoded.toString("latin1") }));
  });
}).on("error", (e) => { console.error(String(e)); process.exit(1); });
