import ArgumentParser

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a pipeline file and print what it would do.",
        discussion: "Reads nothing but the pipeline file; says which input files are missing. Exit code 2 when the file is invalid.")

    @Argument(help: "The pipeline file (YAML).")
    var pipeline: String

    func run() throws {
        do {
            let context = try PipelineContext(path: pipeline)
            for line in context.describe() { Console.out(line) }
            Console.out("\(pipeline): valid")
        } catch {
            throw fail("\(error)")
        }
    }
}
