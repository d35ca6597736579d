// quickforge run examples/hello.js
// A script is one async arrow function; its return value is printed as JSON.
async () => {
  console.log("logs go to stderr");
  const words = ["wasm", "component", "quickjs"];
  return { count: words.length, longest: words.reduce((a, b) => (b.length > a.length ? b : a)) };
}
