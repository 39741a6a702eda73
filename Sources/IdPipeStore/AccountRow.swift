import Foundation
import GRDB
import IdPipeCore

/// How an account outcome is kept in the `account` table.
enum AccountRow {
    /// Binds the row's columns in the order of the `account` table's INSERT.
    static func bind(_ row: ReportAccount, to insert: inout RawInsert) {
        insert.bind(row.sequence)
        insert.bind(row.uid)
        insert.bind(row.file)
        insert.bind(row.line)
        insert.bind(row.relay)
        insert.bind(row.consentReview)
        insert.bind(row.selection)
        insert.bind(row.selectionDetail)
        insert.bind(row.nameOutcome)
        insert.bind(row.email)
        insert.bind(row.displayName)
        insert.bind(row.phone)
        insert.bind(row.providers)
        insert.bind(row.deletionRequest)
        insert.bind(Int64(row.repairs.bits))
    }
}

/// JSON columns, with sorted keys so that equal values are equal text.
enum JSONCoding {
    static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }
}

/// Account-id hashes packed as little-endian 8-byte words.
enum IdHashes {
    static func encode(_ hashes: [UInt64]) -> Data {
        // Written in place: appending each word to the Data cost about 850 instructions a hash.
        var data = Data(count: hashes.count * 8)
        data.withUnsafeMutableBytes { raw in
            for (index, hash) in hashes.enumerated() { raw.storeBytes(of: hash.littleEndian, toByteOffset: index * 8, as: UInt64.self) }
        }
        return data
    }

    static func decode(_ data: Data) -> [UInt64] {
        var result: [UInt64] = []
        result.reserveCapacity(data.count / 8)
        data.withUnsafeBytes { raw in
            for index in stride(from: 0, to: raw.count - 7, by: 8) {
                result.append(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
            }
        }
        return result
    }
}
