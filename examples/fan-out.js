// quickforge run examples/fan-out.js   (with servers configured in forge.toml)
// Calls overlap: forge.parallel runs up to `concurrency` calls at once and
// reports failures instead of throwing.
async () => {
  const servers = ["github", "linear", "sentry"];
  const { results, errors } = await forge.parallel(
    servers.map((s) => () => forge.callTool(s, "list_issues", { state: "open" })),
    { concurrency: 3 },
  );
  return { results, failed: errors.map((e) => `${servers[e.index]}: ${e.error.code}`) };
}
