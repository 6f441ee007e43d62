// Runs before npm start, dev and test. Plain JavaScript, so an older Node can run it and say what is wrong, where it
// would otherwise stop at the first .ts file with ERR_UNKNOWN_FILE_EXTENSION.
if (!process.features.typescript) {
  process.stderr.write(
    `This project runs its TypeScript sources directly, which needs Node.js 22.18 or newer (24 LTS recommended); this is Node.js ${process.version}.\n`,
  );
  process.exit(1);
}
