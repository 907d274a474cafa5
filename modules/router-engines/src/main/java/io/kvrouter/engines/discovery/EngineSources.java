package io.kvrouter.engines.discovery;

import io.kvrouter.engines.config.EngineKey;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The engines this node's sources list: the engines file and Kubernetes discovery, each updated as it changes. When
 * both list the same model and worker id, the file's entry is used (it is the operator's explicit word). Listeners
 * hear of every change (on the source's thread).
 */
public final class EngineSources {
  public static final String FILE = "file";
  public static final String KUBERNETES = "kubernetes";

  private final Map<String, Map<EngineKey, SourcedSpec>> bySource = new TreeMap<>();
  private final Map<String, List<String>> problems = new TreeMap<>();
  private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
  private volatile Map<EngineKey, SourcedSpec> merged = Map.of();

  public void listen(Runnable listener) {
    listeners.add(listener);
  }

  /** Replaces what {@code source} lists, and its problems (entries left out, an unreadable file, ...). */
  public void update(String source, Map<EngineKey, SourcedSpec> engines, List<String> sourceProblems) {
    synchronized (this) {
      bySource.put(source, Map.copyOf(engines));
      problems.put(source, List.copyOf(sourceProblems));
      Map<EngineKey, SourcedSpec> all = new LinkedHashMap<>();
      Map<EngineKey, SourcedSpec> file = bySource.getOrDefault(FILE, Map.of());
      all.putAll(bySource.getOrDefault(KUBERNETES, Map.of()));
      all.putAll(file);
      for (Map.Entry<String, Map<EngineKey, SourcedSpec>> other : bySource.entrySet()) {
        if (!other.getKey().equals(FILE) && !other.getKey().equals(KUBERNETES)) {
          other.getValue().forEach(all::putIfAbsent);
        }
      }
      merged = Collections.unmodifiableMap(all);
    }
    listeners.forEach(Runnable::run);
  }

  /** Only the problems of {@code source} change (a file that no longer parses keeps its last engines). */
  public void problems(String source, List<String> sourceProblems) {
    synchronized (this) {
      problems.put(source, List.copyOf(sourceProblems));
    }
  }

  /** Every engine this node's sources list, by key. */
  public Map<EngineKey, SourcedSpec> engines() {
    return merged;
  }

  public SourcedSpec engine(EngineKey key) {
    return merged.get(key);
  }

  /** Each source's current problems. */
  public synchronized Map<String, List<String>> problems() {
    Map<String, List<String>> copy = new TreeMap<>();
    problems.forEach((source, list) -> copy.put(source, new ArrayList<>(list)));
    return copy;
  }
}
