import Foundation
import Glibc

/// A progress line on stderr (count, total, rate), redrawn in place, only when stderr is a
/// terminal: piped or redirected, long work stays quiet.
final class ProgressLine {
    private let task: String
    private let unit: String
    private let started = Date()
    private var lastDrawn = Date.distantPast
    private var drawnWidth = 0

    /// Nil when stderr is not a terminal.
    init?(task: String, unit: String = "files") {
        guard isatty(STDERR_FILENO) == 1 else { return nil }
        self.task = task
        self.unit = unit
    }

    /// Redraws the line, at most ten times a second.
    func update(_ done: Int, of total: Int?, verb: String) {
        guard Date().timeIntervalSince(lastDrawn) >= 0.1 else { return }
        draw(done, of: total, verb: verb, ending: "")
    }

    /// Draws the last figures and ends the line.
    func finish(_ done: Int, of total: Int?, verb: String) {
        draw(done, of: total, verb: verb, ending: "\n")
    }

    private func draw(_ done: Int, of total: Int?, verb: String, ending: String) {
        lastDrawn = Date()
        let seconds = max(lastDrawn.timeIntervalSince(started), 0.001)
        let rate = Int((Double(done) / seconds).rounded())
        var text = "\(task): \(done)"
        if let total { text += " of \(total)" }
        text += " \(unit) \(verb), \(rate) \(unit)/s"
        let padding = String(repeating: " ", count: max(drawnWidth - text.count, 0))
        drawnWidth = text.count
        FileHandle.standardError.write(Data(("\r" + text + padding + ending).utf8))
    }
}
