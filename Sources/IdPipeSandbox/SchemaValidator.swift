/// Checks request bodies and query parameters against the Identity Toolkit schema (extracted from the
/// OpenAPI document): unknown fields are refused as Google refuses them, and every value must have the
/// schema's type. int64 fields take a JSON number or a decimal string, as proto3 JSON allows.
struct SchemaValidator: Sendable {
    struct Operation: Sendable {
        let method: String
        let query: [String: String]
        let body: String?
    }

    private let operations: [String: Operation]
    /// Schema name → property name → property description (type, format, enum, items, ref).
    private let schemas: [String: [String: SJSON]]

    init(json: String = IdentityToolkitSchema.json) {
        let document = (try? SJSON.parse(json)) ?? .object([])
        var operations: [String: Operation] = [:]
        for (name, value) in document["operations"]?.members ?? [] {
            var query: [String: String] = [:]
            for (parameter, type) in value["query"]?.members ?? [] { query[parameter] = type.string ?? "string" }
            operations[name] = Operation(method: value["method"]?.string ?? "POST", query: query, body: value["body"]?.string)
        }
        self.operations = operations
        var schemas: [String: [String: SJSON]] = [:]
        for (name, properties) in document["schemas"]?.members ?? [] {
            schemas[name] = Dictionary((properties.members ?? []).map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
        }
        self.schemas = schemas
    }

    func operation(_ name: String) -> Operation? { operations[name] }

    /// nil when valid, else the message Google would give.
    func validateQuery(_ query: [(String, String)], of operation: Operation) -> String? {
        for (name, value) in query {
            guard let type = operation.query[name] else {
                return "Invalid JSON payload received. Unknown name \"\(name)\": Cannot bind query parameter. Field '\(name)' could not be found in request message."
            }
            if type == "integer", Int32(value) == nil { return "Invalid value at '\(name)' (TYPE_INT32), \"\(value)\"" }
        }
        return nil
    }

    func validateBody(_ body: SJSON, of operation: Operation) -> String? {
        guard let schema = operation.body else { return "this operation takes no body" }
        guard case .object(let members) = body else { return "Invalid JSON payload received. Expected an object." }
        return validate(members, schema: schema, path: "")
    }

    private func validate(_ members: [(String, SJSON)], schema name: String, path: String) -> String? {
        guard let properties = schemas[name] else { return "schema \(name) is unknown to the sandbox" }
        for (key, value) in members {
            let location = path.isEmpty ? key : "\(path).\(key)"
            guard let property = properties[key] else {
                return "Invalid JSON payload received. Unknown name \"\(key)\"\(path.isEmpty ? "" : " at '\(path)'"): Cannot find field."
            }
            if let problem = check(value, against: property, path: location) { return problem }
        }
        return nil
    }

    private func check(_ value: SJSON, against property: SJSON, path: String) -> String? {
        if value == .null { return nil }
        if let ref = property["ref"]?.string {
            guard case .object(let members) = value else { return "Invalid value at '\(path)': expected an object (\(ref))" }
            return validate(members, schema: ref, path: path)
        }
        let type = property["type"]?.string ?? "object"
        switch (type, value) {
        case ("string", .number(let text)) where property["format"]?.string == "int64":
            return Int64(text) == nil ? "Invalid value at '\(path)' (TYPE_INT64), \(text)" : nil
        case ("string", .string(let text)):
            if property["format"]?.string == "int64", Int64(text) == nil { return "Invalid value at '\(path)' (TYPE_INT64), \"\(text)\"" }
            if let allowed = property["enum"]?.array?.compactMap(\.string), !allowed.contains(text) {
                return "Invalid value at '\(path)' (TYPE_ENUM), \"\(text)\""
            }
            return nil
        case ("boolean", .bool):
            return nil
        case ("integer", .number(let text)):
            return Int64(text) == nil ? "Invalid value at '\(path)' (TYPE_INT32), \(text)" : nil
        case ("number", .number):
            return nil
        case ("array", .array(let items)):
            let itemSchema = property["items"] ?? .object([("type", .string("string"))])
            for (index, item) in items.enumerated() {
                if let problem = check(item, against: itemSchema, path: "\(path)[\(index)]") { return problem }
            }
            return nil
        case ("object", .object):
            return nil
        default:
            let names = ["string": "TYPE_STRING", "boolean": "TYPE_BOOL", "integer": "TYPE_INT32", "number": "TYPE_DOUBLE", "array": "list", "object": "TYPE_MESSAGE"]
            return "Invalid value at '\(path)' (\(names[type] ?? type)), \(value.text)"
        }
    }
}
