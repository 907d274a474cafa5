package io.kvrouter.bench.transport;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A child JVM started by the bench: its stdout is copied to a log file and scanned for the line announcing its port;
 * {@link #close()} closes its stdin (our servers exit on that), then destroys it if it is still running.
 */
final class ServerProcess implements AutoCloseable {
  private final Process process;
  private boolean exitsOnStdinClose = true;
  private final CompletableFuture<Integer> port = new CompletableFuture<>();
  private final List<String> notable = new CopyOnWriteArrayList<>();

  private ServerProcess(Process process) {
    this.process = process;
  }

  static List<String> javaCommand(String mainClass, List<String> jvmFlags, List<String> args) {
    String java = ProcessHandle.current().info().command().orElse("java");
    var command = new java.util.ArrayList<String>();
    command.add(java);
    command.add("-Djava.util.concurrent.ForkJoinPool.common.parallelism=4");
    command.addAll(jvmFlags);
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(mainClass);
    command.addAll(args);
    return command;
  }

  /** Starts {@code command}; {@code ready} must match the line that carries the port in its last group. */
  static ServerProcess start(List<String> command, Map<String, String> env, Pattern ready, Pattern notableLines,
      Path log) throws IOException {
    Files.createDirectories(log.getParent());
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
    builder.environment().putAll(env);
    ServerProcess server = new ServerProcess(builder.start());
    Thread reader = new Thread(() -> server.pump(ready, notableLines, log), "server-stdout-" + log.getFileName());
    reader.setDaemon(true);
    reader.start();
    server.process.onExit().thenRun(() -> server.port.completeExceptionally(
        new IllegalStateException("server exited with " + server.process.exitValue() + " before it was ready; see "
            + log)));
    return server;
  }

  private void pump(Pattern ready, Pattern notableLines, Path log) {
    try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
        StandardCharsets.UTF_8)); PrintWriter out = new PrintWriter(Files.newBufferedWriter(log), true)) {
      String line;
      while ((line = in.readLine()) != null) {
        out.println(line);
        Matcher matcher = ready.matcher(line);
        if (!port.isDone() && matcher.find()) {
          port.complete(Integer.parseInt(matcher.group(matcher.groupCount())));
        }
        if (notableLines != null && notableLines.matcher(line).find() && notable.size() < 20) {
          notable.add(line.strip());
        }
      }
    } catch (IOException e) {
      port.completeExceptionally(e);
    }
  }

  /** For servers that serve until killed ({@code Main}): {@link #close()} sends SIGTERM at once. */
  ServerProcess killOnClose() {
    exitsOnStdinClose = false;
    return this;
  }

  int awaitPort(long seconds) throws Exception {
    return port.get(seconds, TimeUnit.SECONDS);
  }

  long pid() {
    return process.pid();
  }

  boolean alive() {
    return process.isAlive();
  }

  List<String> notableLines() {
    return notable;
  }

  @Override
  public void close() {
    try {
      process.getOutputStream().close();
    } catch (IOException ignored) {
      // already gone
    }
    try {
      if (!process.waitFor(exitsOnStdinClose ? 10 : 0, TimeUnit.SECONDS)) {
        process.destroy();
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
          process.destroyForcibly();
          process.waitFor(5, TimeUnit.SECONDS);
        }
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }
}
