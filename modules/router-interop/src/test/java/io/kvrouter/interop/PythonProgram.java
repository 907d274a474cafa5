package io.kvrouter.interop;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A program of src/test/python run by the project's Python (KVROUTER_PYTHON, else the repository's .venv that
 * bin/python-env builds from requirements-test.txt), bounded in time; its output collected.
 */
final class PythonProgram {
  record Result(int exitCode, String stdout, String stderr) {}

  private PythonProgram() {}

  static Path python() {
    String configured = System.getenv("KVROUTER_PYTHON");
    if (configured != null && !configured.isBlank()) {
      return Path.of(configured);
    }
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null) {
      Path venv = dir.resolve(".venv/bin/python");
      if (Files.isExecutable(venv) && Files.exists(dir.resolve("requirements-test.txt"))) {
        return venv;
      }
      dir = dir.getParent();
    }
    throw new IllegalStateException("no Python for the test counterparts: set KVROUTER_PYTHON or run bin/python-env "
        + "(it creates .venv from requirements-test.txt; bin/test does both)");
  }

  static Result run(long timeoutSeconds, String script, String... args) throws Exception {
    Path file = Path.of("src/test/python", script).toAbsolutePath();
    List<String> command = new ArrayList<>(List.of(python().toString(), "-u", file.toString()));
    command.addAll(List.of(args));
    Process process = new ProcessBuilder(command).start();
    CompletableFuture<String> out = read(process.getInputStream());
    CompletableFuture<String> err = read(process.getErrorStream());
    if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new IllegalStateException(script + " did not finish within " + timeoutSeconds + " s");
    }
    return new Result(process.exitValue(), out.get(10, TimeUnit.SECONDS), err.get(10, TimeUnit.SECONDS));
  }

  private static CompletableFuture<String> read(InputStream stream) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        return "[read failed: " + e + "]";
      }
    }, runnable -> {
      Thread thread = new Thread(runnable, "python-output");
      thread.setDaemon(true);
      thread.start();
    });
  }
}
