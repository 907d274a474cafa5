package io.kvrouter.tokenizer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs the project's Python (KVROUTER_PYTHON, else the repository's .venv, which bin/python-env creates) on a script
 * with JSON on stdin, bounded in time; fails with a clear message when there is no Python to run.
 */
final class PythonRunner {
  static final Path REPO = findRepo();

  private PythonRunner() {}

  static Path python() {
    String configured = System.getenv("KVROUTER_PYTHON");
    if (configured != null && !configured.isBlank()) {
      return Path.of(configured);
    }
    Path venv = REPO.resolve(".venv/bin/python");
    if (Files.isExecutable(venv)) {
      return venv;
    }
    throw new IllegalStateException("no Python for the test: set KVROUTER_PYTHON or run bin/python-env, which "
        + "creates " + venv + " from requirements-test.txt");
  }

  /** The real models' chat templates bin/python-env puts in .venv/chat-templates (KVROUTER_CHAT_TEMPLATES). */
  static Path chatTemplates() {
    String configured = System.getenv("KVROUTER_CHAT_TEMPLATES");
    Path dir = configured != null && !configured.isBlank() ? Path.of(configured) : REPO.resolve(".venv/chat-templates");
    if (!Files.isRegularFile(dir.resolve("SOURCE"))) {
      throw new IllegalStateException("no chat templates in " + dir + ": run bin/python-env, which fetches them with "
          + "modules/router-tokenizer/src/test/python/fetch_chat_templates.py");
    }
    return dir;
  }

  static String run(String input, long timeoutSeconds, String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(python().toString());
    command.addAll(List.of(args));
    Path err = Files.createTempFile("kvrouter-python", ".err");
    try {
      Process process = new ProcessBuilder(command).directory(REPO.toFile())
          .redirectError(err.toFile()).start();
      Thread writer = new Thread(() -> {
        try (var in = process.getOutputStream()) {
          in.write(input.getBytes(StandardCharsets.UTF_8));
        } catch (IOException ignored) {
          // the process exited early: its status and stderr say why
        }
      });
      writer.start();
      byte[] out = process.getInputStream().readAllBytes();
      if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new IllegalStateException(command + " did not finish in " + timeoutSeconds + " s");
      }
      writer.join();
      if (process.exitValue() != 0) {
        throw new IllegalStateException(command + " exited " + process.exitValue() + ": "
            + Files.readString(err));
      }
      return new String(out, StandardCharsets.UTF_8);
    } finally {
      Files.deleteIfExists(err);
    }
  }

  private static Path findRepo() {
    Path dir = Path.of("").toAbsolutePath();
    for (Path p = dir; p != null; p = p.getParent()) {
      if (Files.isRegularFile(p.resolve("requirements-test.txt")) && Files.isDirectory(p.resolve("modules"))) {
        return p;
      }
    }
    throw new IllegalStateException("not inside the kvrouter repository: " + dir);
  }
}
