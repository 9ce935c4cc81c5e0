// Runs a TypeScript check under Node: every .ts file required is
// transpiled to CommonJS by the TypeScript compiler in $TYPESCRIPT (the
// npm package, from scripts/setup-eval-tools.sh). Types are not checked:
// the check's asserts are.
const fs = require("fs");
const path = require("path");
const ts = require(process.env.TYPESCRIPT);

require.extensions[".ts"] = (module, filename) => {
  const out = ts.transpileModule(fs.readFileSync(filename, "utf8"), {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2020 },
    fileName: filename,
    reportDiagnostics: true,
  });
  const errors = (out.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length) {
    throw new Error(filename + ": " + ts.flattenDiagnosticMessageText(errors[0].messageText, "\n"));
  }
  module._compile(out.outputText, filename);
};

require(path.resolve(process.argv[2]));
