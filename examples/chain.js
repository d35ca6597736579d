// quickforge --config forge.toml.example run examples/chain.js
// One round trip, two servers: compute with one, remember with the other,
// read it back, and return only what matters.
async () => {
  const sum = await forge.callTool("everything", "get-sum", { a: 20, b: 22 });
  await forge.callTool("memory", "create_entities", {
    entities: [{ name: "the-answer", entityType: "fact", observations: [sum] }],
  });
  const graph = await forge.server("memory").read_graph({});
  await forge.stash.put("last-sum", sum, { ttl: 600 });
  return graph.entities.find((e) => e.name === "the-answer");
}
