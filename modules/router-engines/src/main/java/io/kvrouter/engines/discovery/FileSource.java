package io.kvrouter.engines.discovery;

import io.kvrouter.engines.config.EngineKey;
import io.kvrouter.engines.config.EngineSpec;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the engines file at start and whenever its content changes (checked every poll interval: polling also sees a
 * file replaced by a rename, as configuration tools and Kubernetes ConfigMaps do). A file that no longer parses keeps
 * the engines it listed last, its error shown; a file that is gone lists none.
 */
public final class FileSource implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(FileSource.class);

  private final Path path;
  private final EngineSources sources;
  private final ScheduledExecutorService timer;
  private byte[] last;

  public FileSource(Path path, EngineSources sources, Duration pollInterval) {
    this.path = path;
    this.sources = sources;
    this.timer = Executors.newSingleThreadScheduledExecutor(runnable -> {
      Thread thread = new Thread(runnable, "kvrouter-engines-file");
      thread.setDaemon(true);
      return thread;
    });
    reload();
    timer.scheduleWithFixedDelay(this::reload, pollInterval.toMillis(), pollInterval.toMillis(),
        TimeUnit.MILLISECONDS);
  }

  /** Reads the file if it changed since the last read. */
  public synchronized void reload() {
    byte[] content;
    try {
      content = Files.readAllBytes(path);
    } catch (NoSuchFileException e) {
      if (last == null || last.length > 0) {
        last = new byte[0];
        log.warn("engines file {} does not exist: it lists no engines", path);
        sources.update(EngineSources.FILE, Map.of(), List.of(path + " does not exist"));
      }
      return;
    } catch (IOException e) {
      sources.problems(EngineSources.FILE, List.of(path + " could not be read: " + e.getMessage()));
      return;
    }
    if (last != null && Arrays.equals(last, content)) {
      return;
    }
    last = content;
    try {
      EnginesFile.Parsed parsed = EnginesFile.parse(new String(content, StandardCharsets.UTF_8));
      Map<EngineKey, SourcedSpec> engines = new LinkedHashMap<>();
      for (EngineSpec spec : parsed.engines()) {
        engines.put(spec.key(), new SourcedSpec(spec, "file:" + path));
      }
      parsed.problems().forEach(problem -> log.warn("engines file {}: {}", path, problem));
      log.info("engines file {}: {} engine(s)", path, engines.size());
      sources.update(EngineSources.FILE, engines, parsed.problems());
    } catch (EnginesFile.UnreadableFileException e) {
      log.warn("engines file {} is unreadable, keeping the engines it listed before: {}", path, e.getMessage());
      sources.problems(EngineSources.FILE, List.of(path + ": " + e.getMessage()));
    }
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
