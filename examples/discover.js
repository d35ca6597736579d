// quickforge run --search examples/discover.js
// Search code reads the manifest: which servers exist, which tools match.
async () => ({
  servers: manifest.servers.map((s) => s.name),
  matches: manifest.search("issue", { limit: 5 }),
})
