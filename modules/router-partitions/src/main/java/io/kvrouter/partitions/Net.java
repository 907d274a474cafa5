package io.kvrouter.partitions;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The network plumbing, {@code bin/net.sh} (which holds the addresses): cuts, heals and slow links between the
 * namespaces it created. The hub namespace and the nodes' namespaces are made by {@code bin/partitions} before this
 * JVM starts in the hub.
 */
public final class Net {
  public static final String SUBNET_PREFIX = "10.231.0.";
  public static final String HUB = SUBNET_PREFIX + "100";
  public static final int GRPC_PORT = 50051;
  public static final int MANAGEMENT_PORT = 8558;
  public static final int REMOTE_PORT = 25520;

  private final Path script;
  private final Log log;

  public Net(Path repo, Log log) {
    this.script = repo.resolve("modules/router-partitions/bin/net.sh");
    this.log = log;
  }

  public static String ip(int node) {
    return SUBNET_PREFIX + node;
  }

  public static String namespace(int node) {
    return "kvp-n" + node;
  }

  /** The node whose remoting address is {@code pekko://system@10.231.0.N:port}, or 0. */
  public static int nodeOfAddress(String address) {
    int at = address.indexOf('@');
    int colon = address.lastIndexOf(':');
    if (at < 0 || colon < at) {
      return 0;
    }
    String host = address.substring(at + 1, colon);
    return host.startsWith(SUBNET_PREFIX) ? Integer.parseInt(host.substring(SUBNET_PREFIX.length())) : 0;
  }

  public void cut(int a, int b) {
    run("cut", a, b);
  }

  public void cutOneWay(int from, int to) {
    run("cut-oneway", from, to);
  }

  public void heal() {
    run("heal");
  }

  public void proxyStart(int nodes) {
    run("proxy-start", nodes);
  }

  public void proxyStop() {
    run("proxy-stop");
  }

  public void slow(int from, int to, int ms, int jitterMs) {
    run("slow", from, to, ms, jitterMs);
  }

  public void unslow() {
    run("unslow");
  }

  private void run(Object... args) {
    List<String> command = new ArrayList<>(List.of("bash", script.toString()));
    for (Object arg : args) {
      command.add(String.valueOf(arg));
    }
    log.info("net: " + String.join(" ", command.subList(2, command.size())));
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes());
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("net.sh " + command.subList(2, command.size()) + " failed: " + out);
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + script, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
