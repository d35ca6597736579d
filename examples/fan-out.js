// quickforge --config forge.toml.example run examples/fan-out.js
// Calls overlap: forge.parallel runs up to `concurrency` calls at once and
// reports failures instead of throwing.
async () => {
  const pairs = [[1, 2], [3, 4], [5, "six"]];
  const { results, errors } = await forge.parallel(
    pairs.map(([a, b]) => () => forge.callTool("everything", "get-sum", { a, b })),
    { concurrency: 3 },
  );
  return { results, failed: errors.map((e) => `${e.index}: ${e.code}`) };
}
