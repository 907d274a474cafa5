package io.kvrouter.bench.transport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** A process's CPU time (utime + stime) in clock ticks, from {@code /proc/<pid>/stat}. */
public final class ProcStat {
  private ProcStat() {}

  public static long cpuTicks(long pid) {
    try {
      String stat = new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), "stat")),
          StandardCharsets.US_ASCII);
      // the command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'
      String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
      // fields[0] is field 3 (state); utime is field 14, stime field 15
      return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
    } catch (IOException | RuntimeException e) {
      throw new IllegalStateException("cannot read CPU time of process " + pid + ": " + e, e);
    }
  }

  /**
   * CPU ticks of a JVM's JIT compiler threads (named {@code C1/C2 CompilerThre…} in each thread's {@code comm} under
   * {@code /proc/<pid>/task}): the part of a window's server CPU spent compiling rather than serving; 0 when the
   * tasks cannot be read.
   */
  public static long compilerTicks(long pid) {
    Path tasks = Path.of("/proc", Long.toString(pid), "task");
    long total = 0;
    try (java.util.stream.Stream<Path> threads = Files.list(tasks)) {
      for (Path task : (Iterable<Path>) threads::iterator) {
        try {
          String name = Files.readString(task.resolve("comm"), StandardCharsets.US_ASCII).trim();
          if (name.contains("CompilerThre")) {
            String stat = Files.readString(task.resolve("stat"), StandardCharsets.US_ASCII);
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
            total += Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
          }
        } catch (IOException | RuntimeException ignored) {
          // the thread ended between the listing and the read
        }
      }
    } catch (IOException e) {
      return 0;
    }
    return total;
  }

  /** Busy CPU ticks of the whole machine (all CPUs: user, nice, system, irq, softirq, steal) from /proc/stat. */
  public static long machineBusyTicks() {
    try {
      String first = Files.readAllLines(Path.of("/proc/stat")).get(0);
      String[] f = first.trim().split("\\s+");
      // cpu user nice system idle iowait irq softirq steal ...
      return Long.parseLong(f[1]) + Long.parseLong(f[2]) + Long.parseLong(f[3]) + Long.parseLong(f[6])
          + Long.parseLong(f[7]) + (f.length > 8 ? Long.parseLong(f[8]) : 0);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** {@code getconf CLK_TCK}; 100 on Linux when getconf is missing. */
  public static long clockTicksPerSecond() {
    try {
      Process process = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start();
      String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim();
      process.waitFor();
      return Long.parseLong(out);
    } catch (IOException | RuntimeException e) {
      return 100;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 100;
    }
  }
}
