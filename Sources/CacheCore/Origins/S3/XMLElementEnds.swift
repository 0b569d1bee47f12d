import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The closing of each element of an XML document, in document order, with the path of
/// element names leading to it and the text directly inside it: the little S3's responses
/// need, without a document tree.
struct XMLElementEnd: Equatable {
    var path: [String]
    var text: String
}

enum XMLElementEnds {
    /// Nil if the document is not well-formed XML.
    static func parse(_ data: Data) -> [XMLElementEnd]? {
        let collector = Collector()
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.delegate = collector
        return parser.parse() ? collector.ends : nil
    }

    private final class Collector: NSObject, XMLParserDelegate {
        var ends: [XMLElementEnd] = []
        private var path: [String] = []
        private var texts: [String] = []

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                    qualifiedName: String?, attributes: [String: String] = [:]) {
            path.append(elementName)
            texts.append("")
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if !texts.isEmpty { texts[texts.count - 1] += string }
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?,
                    qualifiedName: String?) {
            ends.append(XMLElementEnd(path: path, text: texts.removeLast()))
            path.removeLast()
        }
    }
}
