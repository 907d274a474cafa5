package io.kvrouter.partitions;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** Progress lines on stderr and in the run's log, stamped with the run's clock. */
public final class Log {
  private final History clock;
  private final PrintStream file;

  public Log(History clock, Path file) {
    this.clock = clock;
    try {
      this.file = new PrintStream(Files.newOutputStream(file, StandardOpenOption.CREATE, StandardOpenOption.APPEND),
          true);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public synchronized void info(String line) {
    String stamped = String.format("[%9.3fs] %s", clock.nowMs() / 1000, line);
    System.err.println(stamped);
    file.println(stamped);
  }
}
