package io.kvrouter.sim.server;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.concurrent.ThreadLocalRandom;

/** Finding free loopback ports when a rank's ports must be consecutive (rank r on port + r). */
final class FreePorts {
  private FreePorts() {}

  /** A base port such that {@code count} consecutive ports from it were free a moment ago. */
  static int consecutive(int count) {
    for (int attempt = 0; attempt < 200; attempt++) {
      int base = ThreadLocalRandom.current().nextInt(20_000, 60_000 - count);
      if (allFree(base, count)) {
        return base;
      }
    }
    throw new IllegalStateException("no " + count + " consecutive free loopback ports found");
  }

  private static boolean allFree(int base, int count) {
    for (int port = base; port < base + count; port++) {
      try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
        socket.setReuseAddress(true);
      } catch (IOException e) {
        return false;
      }
    }
    return true;
  }
}
