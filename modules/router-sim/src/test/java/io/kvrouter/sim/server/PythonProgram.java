package io.kvrouter.sim.server;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A Python program of src/test/python run by the project's Python (KVROUTER_PYTHON, else the repository's .venv, as
 * bin/test sets up from requirements-test.txt), bounded in time; its output collected.
 */
final class PythonProgram implements AutoCloseable {
  record Result(int exitCode, String stdout, String stderr) {}

  private final Process process;
  private final CompletableFuture<String> stdout;
  private final CompletableFuture<String> stderr;

  /** The repository's root: the module runs its tests from modules/router-sim. */
  static final Path REPO = Path.of("").toAbsolutePath().resolve("../..").normalize();

  private PythonProgram(Process process) {
    this.process = process;
    this.stdout = read(process.getInputStream());
    this.stderr = read(process.getErrorStream());
  }

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

  static PythonProgram start(String script, String... args) throws IOException {
    Path file = Path.of("src/test/python", script).toAbsolutePath();
    List<String> command = new ArrayList<>(List.of(python().toString(), "-u", file.toString()));
    command.addAll(List.of(args));
    return new PythonProgram(new ProcessBuilder(command).start());
  }

  static Result run(long timeoutSeconds, String script, String... args) throws Exception {
    try (PythonProgram program = start(script, args)) {
      return program.await(timeoutSeconds);
    }
  }

  void send(String line) throws IOException {
    OutputStream in = process.getOutputStream();
    in.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    in.flush();
  }

  /** Waits until stderr has shown {@code marker} (the program's "ready"). */
  void awaitStderr(String marker, long timeoutSeconds) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
    while (System.nanoTime() < deadline && process.isAlive()) {
      if (partialStderr.toString().contains(marker)) {
        return;
      }
      Thread.sleep(20);
    }
    throw new IllegalStateException("the Python program did not print " + marker + ": " + partialStderr);
  }

  Result await(long timeoutSeconds) throws Exception {
    if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new IllegalStateException("the Python program did not finish within " + timeoutSeconds + " s; stderr: "
          + partialStderr);
    }
    return new Result(process.exitValue(), stdout.get(10, TimeUnit.SECONDS), stderr.get(10, TimeUnit.SECONDS));
  }

  private final StringBuffer partialStderr = new StringBuffer();

  private CompletableFuture<String> read(InputStream stream) {
    boolean isStderr = stream == process.getErrorStream();
    return CompletableFuture.supplyAsync(() -> {
      StringBuilder all = new StringBuilder();
      byte[] buffer = new byte[8192];
      try {
        int n;
        while ((n = stream.read(buffer)) > 0) {
          String text = new String(buffer, 0, n, StandardCharsets.UTF_8);
          all.append(text);
          if (isStderr) {
            partialStderr.append(text);
          }
        }
      } catch (IOException e) {
        all.append("\n[read failed: ").append(e).append(']');
      }
      return all.toString();
    }, runnable -> {
      Thread t = new Thread(runnable, "python-output");
      t.setDaemon(true);
      t.start();
    });
  }

  @Override
  public void close() {
    if (process.isAlive()) {
      process.destroyForcibly();
    }
  }
}
