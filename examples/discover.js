// quickforge --config forge.toml.example run --search examples/discover.js
// Search code reads the manifest: which servers exist, which tools match, and
// the exact, typed signature of the one to call.
async () => ({
  servers: manifest.servers.map((s) => `${s.name} (${s.status}, ${s.tools} tools)`),
  matches: manifest.search("add two numbers", { limit: 3 }),
  signature: manifest.tool("everything", "get-sum").signature,
})
